package agent_test

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testcheck"
	_ "github.com/cairnhq/cairn/store/file"
	_ "github.com/cairnhq/cairn/store/sqlite"
)

var (
	crashKills  = flag.Int("crash.kills", 0, "SIGKILLs the crash test lands on each store (default 50, or $CAIRN_CRASH_KILLS)")
	crashStores = flag.String("crash.stores", "", "comma-separated stores the crash test runs on: sqlite, file (default both, or $CAIRN_CRASH_STORES)")
	crashSeed   = flag.Uint64("crash.seed", 0, "seed of the kill schedule, to replay a failed run (default from the clock, or $CAIRN_CRASH_SEED)")
)

// crashSeedValue returns the seed of the kill schedule and logs it, so that
// a failure can be replayed with -crash.seed (or $CAIRN_CRASH_SEED). The
// schedule, not the machine's timing, is what the seed fixes.
func crashSeedValue(t *testing.T) uint64 {
	seed := *crashSeed
	if seed == 0 {
		if n, err := strconv.ParseUint(os.Getenv("CAIRN_CRASH_SEED"), 10, 64); err == nil {
			seed = n
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("kill schedule seed %d (replay with -crash.seed %d or CAIRN_CRASH_SEED=%d)", seed, seed, seed)
	return seed
}

// crashStoreURLs returns the store URLs the crash test runs on, in dir.
func crashStoreURLs(dir string) map[string]string {
	names := *crashStores
	if names == "" {
		names = os.Getenv("CAIRN_CRASH_STORES")
	}
	if names == "" {
		names = "sqlite,file"
	}
	urls := map[string]string{}
	for _, n := range strings.Split(names, ",") {
		switch n = strings.TrimSpace(n); n {
		case "sqlite":
			urls[n] = "sqlite://" + filepath.Join(dir, "cairn.db")
		case "file":
			urls[n] = "file://" + filepath.Join(dir, "sessions")
		}
	}
	return urls
}

func wantKills() int {
	if *crashKills > 0 {
		return *crashKills
	}
	if n, err := strconv.Atoi(os.Getenv("CAIRN_CRASH_KILLS")); err == nil && n > 0 {
		return n
	}
	return 50
}

func buildCrashProg(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "crashprog")
	cmd := exec.Command("go", "build", "-o", bin, "./internal/crashprog")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build crashprog: %v\n%s", err, out)
	}
	return bin
}

// response is what the crash test compares of a model response.
type response struct {
	Text  string
	Calls []string
}

// TestAgent_CrashResume kills a process running a scripted session with
// SIGKILL at random moments and restarts it until the run completes, and
// checks that no completed step was repeated and the history stays valid.
func TestAgent_CrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills processes")
	}
	bin := buildCrashProg(t)
	for name, url := range crashStoreURLs(t.TempDir()) {
		t.Run(name, func(t *testing.T) { crashResume(t, bin, url) })
	}
}

func crashResume(t *testing.T, bin, url string) {
	dir := t.TempDir()

	// The reference: one uninterrupted run.
	refSide := filepath.Join(dir, "ref.txt")
	refScript := testcheck.CrashScript(t, t.TempDir(), refSide, 3)
	if out, err := exec.Command(bin, "-store", url, "-session", "ref", "-script", refScript).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	ref, _ := checkCrashSession(t, url, "ref", refSide, nil)

	want := wantKills()
	kills, sessions, unknown := 0, 0, 0
	seed := crashSeedValue(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	landed := map[string]int{} // the last stored event when a kill landed
	st, err := cairn.Open(t.Context(), url, cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for kills < want {
		sessions++
		id := fmt.Sprintf("crash-%d", sessions)
		sdir := t.TempDir()
		side := filepath.Join(sdir, "side.txt")
		scr := testcheck.CrashScript(t, sdir, side, 3)
		for lives := 0; ; lives++ {
			if lives > 500 {
				t.Fatalf("session %s did not complete after %d restarts", id, lives)
			}
			// Most kills land a random moment into the run, some during start-up.
			d, afterReady := time.Duration(rng.IntN(50_000))*time.Microsecond, rng.IntN(5) > 0
			done, killed := runAndKill(t, bin, url, id, scr, d, afterReady)
			if killed {
				kills++
				landed[lastKind(t, st, id)]++
			}
			if done {
				break
			}
		}
		_, n := checkCrashSession(t, url, id, side, ref)
		unknown += n
	}
	t.Logf("crash test on %s (seed %d): %d SIGKILLs over %d sessions; every session completed with the reference's %d model responses; %d append_file calls ended \"outcome unknown\"; last event stored when killed: %v",
		url, seed, kills, sessions, len(ref), unknown, landed)
}

// lastKind names the last event the store holds for a session.
func lastKind(t *testing.T, st cairn.Store, id string) string {
	rec, err := st.Load(t.Context(), id, 0)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		return "no session"
	case err != nil:
		t.Fatal(err)
	case len(rec.Events) == 0:
		return "no event"
	}
	return string(rec.Events[len(rec.Events)-1].Kind)
}

// runAndKill starts the program and kills it d after it starts (or, with
// afterReady, d after it has loaded the session) unless it exits first. It
// reports whether the run completed and whether the process was killed.
func runAndKill(t *testing.T, bin, url, id, scr string, d time.Duration, afterReady bool) (done, killed bool) {
	t.Helper()
	cmd := exec.Command(bin, "-store", url, "-session", id, "-script", scr)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(ready)
			}
		}
		exited <- cmd.Wait()
	}()
	var waited <-chan struct{} // closed: start the kill timer now
	if afterReady {
		waited = ready
	} else {
		c := make(chan struct{})
		close(c)
		waited = c
	}
	select {
	case err = <-exited:
		return exitStatus(t, id, err, &stderr)
	case <-waited:
	}
	select {
	case err = <-exited:
	case <-time.After(d):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err = <-exited
	}
	return exitStatus(t, id, err, &stderr)
}

func exitStatus(t *testing.T, id string, err error, stderr *strings.Builder) (done, killed bool) {
	t.Helper()
	if err == nil {
		return true, false
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return false, true
		}
	}
	t.Fatalf("crashprog session %s: %v\n%s", id, err, stderr.String())
	return false, false
}

// checkCrashSession loads a session and checks it: completed, dense seqs,
// each model response and each tool result once, model responses equal to
// want (when given), every tool call answered exactly once and after it,
// and no line of the side file written twice. It returns the model
// responses and the number of "outcome unknown" results.
func checkCrashSession(t *testing.T, url, id, side string, want []response) ([]response, int) {
	t.Helper()
	st, err := cairn.Open(t.Context(), url, cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
	mem, err := cairn.NewMemory(rec.Events...) // validates dense seqs from 1
	if err != nil {
		t.Fatalf("session %s: %v", id, err)
	}
	state, err := mem.State()
	if err != nil {
		t.Fatal(err)
	}
	if state.Status != cairn.StatusCompleted || state.Output != "all done" {
		t.Fatalf("session %s: status %s, output %q; want completed, \"all done\"", id, state.Status, state.Output)
	}
	var got []response
	calls, results := map[string]bool{}, map[string]bool{}
	unknown := 0
	for _, e := range rec.Events {
		v, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch d := v.(type) {
		case *cairn.ModelResponse:
			r := response{Text: d.Text}
			for _, c := range d.ToolCalls {
				if calls[c.ID] {
					t.Errorf("session %s: tool call %s asked for twice (a model response recorded twice)", id, c.ID)
				}
				calls[c.ID] = true
				args, _ := cairn.Canonical(c.Args)
				r.Calls = append(r.Calls, c.ID+" "+c.Name+" "+strings.ReplaceAll(string(args), side, "SIDE"))
			}
			got = append(got, r)
		case *cairn.ToolResult:
			if results[d.CallID] {
				t.Errorf("session %s: tool call %s has two results", id, d.CallID)
			}
			results[d.CallID] = true
			if d.Output == agent.OutcomeUnknown {
				unknown++
			}
		}
	}
	if want != nil && !slices.EqualFunc(got, want, func(a, b response) bool {
		return a.Text == b.Text && slices.Equal(a.Calls, b.Calls)
	}) {
		t.Errorf("session %s: model responses\n got %v\nwant %v", id, got, want)
	}
	testcheck.History(t, state.Messages)
	testcheck.UniqueLines(t, id, side)
	return got, unknown
}
