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
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	_ "github.com/cairnhq/cairn/store/file"
	_ "github.com/cairnhq/cairn/store/sqlite"
)

var (
	crashKills  = flag.Int("crash.kills", 0, "SIGKILLs the crash test lands on each store (default 50, or $CAIRN_CRASH_KILLS)")
	crashStores = flag.String("crash.stores", "", "comma-separated stores the crash test runs on: sqlite, file (default both, or $CAIRN_CRASH_STORES)")
	crashSeed   = flag.Uint64("crash.seed", 0, "seed of the kill schedule, to replay a failed run (default from the clock, or $CAIRN_CRASH_SEED)")
)

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
	kills, sessions, unknown, again := 0, 0, 0, 0
	// The seed fixes the kill schedule, not the machine's timing.
	seed := testenv.Seed(t, *crashSeed, "kill schedule", "crash.seed", "CAIRN_CRASH_SEED")
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
		calls := filepath.Join(sdir, "calls.txt")
		scr := testcheck.CrashScript(t, sdir, side, 3)
		for lives := 0; ; lives++ {
			if lives > 500 {
				t.Fatalf("session %s did not complete after %d restarts", id, lives)
			}
			// Most kills land a random moment into the run, some during start-up.
			d, afterReady := time.Duration(rng.IntN(50_000))*time.Microsecond, rng.IntN(5) > 0
			done, killed := runAndKill(t, bin, url, id, scr, calls, d, afterReady)
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
		again += checkModelCalls(t, st, id, calls)
	}
	t.Logf("crash test on %s (seed %d): %d SIGKILLs over %d sessions; every session completed with the reference's %d model responses; 0 model calls made again after their response was stored (%d made again whose response a kill kept from the store); %d append_file calls ended \"outcome unknown\"; last event stored when killed: %v",
		url, seed, kills, sessions, len(ref), again, unknown, landed)
}

// checkModelCalls checks from the log of a session's model calls (each
// call that returned, "PID INDEX", in the order made; crashprog -calls)
// that no call was made again once its response was stored: the response
// recorded at each index names the process whose call it is
// ("script@PID"), and no process asked for that index after it. It
// returns how many calls were made again before that, when a kill had
// kept an earlier call's response from the store.
func checkModelCalls(t *testing.T, st cairn.Store, id, log string) int {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	type call struct{ pid, index string }
	var calls []call
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		pid, index, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("session %s: a malformed line in the log of model calls: %q", id, line)
		}
		calls = append(calls, call{pid, index})
	}
	again := 0
	for i, r := range decoded[cairn.ModelResponse](t, loadEvents(t, st, id), cairn.KindModelResponse) {
		stored := call{strings.TrimPrefix(r.Model, "script@"), strconv.Itoa(i)}
		at := slices.Index(calls, stored)
		if at < 0 {
			t.Fatalf("session %s: response %d came from no logged call (%s)", id, i, r.Model)
		}
		for j, c := range calls {
			switch {
			case c.index != stored.index || j == at:
			case j < at:
				again++
			default:
				t.Errorf("session %s: model call %d made again by process %s after process %s stored its response", id, i, c.pid, stored.pid)
			}
		}
	}
	return again
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
func runAndKill(t *testing.T, bin, url, id, scr, calls string, d time.Duration, afterReady bool) (done, killed bool) {
	t.Helper()
	cmd := exec.Command(bin, "-store", url, "-session", id, "-script", scr, "-calls", calls)
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

// checkCrashSession opens the store at url and checks a session in it
// (testcheck.Completed).
func checkCrashSession(t *testing.T, url, id, side string, want []testcheck.Response) ([]testcheck.Response, int) {
	t.Helper()
	st, err := cairn.Open(t.Context(), url, cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return testcheck.Completed(t, st, id, side, want)
}
