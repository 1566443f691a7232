package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
)

// The tests that run the cairn binary share what is here: the binary, a
// folder and a home of their own (cliEnv), and the checks they all make of
// what a command printed and of the sessions it left.

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// cairnBinary builds the command once per test run.
func cairnBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cairn-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "cairn")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// cliEnv runs the cairn binary in a folder of its own (dir) with a home of
// its own (dir/.home).
type cliEnv struct {
	t   *testing.T
	bin string
	dir string
	env []string
}

func newCLIEnv(t *testing.T) *cliEnv {
	dir := t.TempDir()
	home := filepath.Join(dir, ".home")
	return &cliEnv{t: t, bin: cairnBinary(t), dir: dir,
		env: append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "XDG_DATA_HOME="+home+"/.local/share")}
}

func (c *cliEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Dir, cmd.Env = c.dir, c.env
	return cmd
}

// run runs cairn and returns stdout, stderr and the exit status.
func (c *cliEnv) run(args ...string) (string, string, int) {
	c.t.Helper()
	return c.result(c.command(args...))
}

// result runs cmd, a cairn command whose stdout and stderr are not set,
// and returns them and the exit status.
func (c *cliEnv) result(cmd *exec.Cmd) (string, string, int) {
	c.t.Helper()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	code, err := exitStatus(cmd.Run())
	if err != nil {
		c.t.Fatalf("run cairn %v: %v", cmd.Args[1:], err)
	}
	return out.String(), errb.String(), code
}

// exitStatus is the exit status of a process from what running or waiting
// for it returned; err is an error that is not an exit status (the
// process did not start, say).
func exitStatus(err error) (int, error) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// must runs cairn and fails the test unless it exits 0; it returns stdout.
func (c *cliEnv) must(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("cairn %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// start starts cairn with args, stdout and stderr both written to the
// builder it returns (read it once the process has ended). The process is
// killed at the end of the test if it is still running then.
func (c *cliEnv) start(args ...string) (*exec.Cmd, *strings.Builder) {
	c.t.Helper()
	cmd := c.command(args...)
	out := new(strings.Builder)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, out
}

// writeFile writes a file in the test's folder and returns its path.
func (c *cliEnv) writeFile(name, text string) string {
	c.t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// queueRuns queues n runs with `cairn run --detach` in a file store in c's
// folder, for a model that follows script. It returns the store's URL,
// the flags that name the store and the model, and the sessions' IDs,
// oldest first.
func (c *cliEnv) queueRuns(script string, n int) (storeURL string, base, ids []string) {
	c.t.Helper()
	storeURL = "file://" + filepath.Join(c.dir, "sessions")
	base = []string{"--store", storeURL, "--model", "script:" + c.writeFile("script.json", script)}
	for i := range n {
		out := c.must(append(base, "run", "--detach", fmt.Sprintf("task %d", i))...)
		ids = append(ids, strings.TrimSpace(out))
	}
	return storeURL, base, ids
}

// shown is a session as `cairn --json sessions show` prints it.
type shown struct {
	Info struct {
		Status string `json:"status"`
		Steps  int    `json:"steps"`
	} `json:"info"`
	Events []struct {
		Seq  int64           `json:"seq"`
		Kind string          `json:"kind"`
		Data json.RawMessage `json:"data"`
	} `json:"events"`
}

// show returns the session as `cairn --json sessions show` prints it;
// false when the command fails (no such session).
func (c *cliEnv) show(id string) (*shown, bool) {
	out, _, code := c.run("--json", "sessions", "show", id)
	if code != 0 {
		return nil, false
	}
	var s shown
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		c.t.Fatalf("show --json: %v\n%s", err, out)
	}
	return &s, true
}

// mustShow is show of a session that must be there.
func (c *cliEnv) mustShow(id string) *shown {
	c.t.Helper()
	s, ok := c.show(id)
	if !ok {
		c.t.Fatalf("session %s is not there", id)
	}
	return s
}

// listed is a session as `cairn --json sessions list` prints it.
type listed struct {
	ID      string            `json:"id"`
	Status  string            `json:"status"`
	LastSeq int64             `json:"last_seq"`
	Labels  map[string]string `json:"labels"`
}

// list returns the sessions `cairn --json sessions list` prints, by ID,
// of the store the flags name.
func (c *cliEnv) list(store ...string) map[string]listed {
	c.t.Helper()
	out, errOut, code := c.run(append(store[:len(store):len(store)], "--json", "sessions", "list")...)
	if code != 0 {
		c.t.Fatalf("sessions list: exit %d: %s", code, errOut)
	}
	var infos []listed
	if err := json.Unmarshal([]byte(out), &infos); err != nil {
		c.t.Fatalf("sessions list --json: %v\n%s", err, out)
	}
	m := map[string]listed{}
	for _, i := range infos {
		m[i.ID] = i
	}
	return m
}

// statuses are the sessions' statuses in a list, by ID.
func statuses(l map[string]listed) map[string]string {
	m := map[string]string{}
	for id, s := range l {
		m[id] = s.Status
	}
	return m
}

// testStore returns the flags that name a fresh store of backend for c:
// --store URL, and on a server a namespace of its own whose name starts
// with prefix, where the sessions ids are deleted at the end of the test.
func testStore(t *testing.T, c *cliEnv, backend, prefix string, ids ...string) []string {
	t.Helper()
	switch backend {
	case "sqlite":
		return []string{"--store", "sqlite://" + filepath.Join(c.dir, "c.db")}
	case "file":
		return []string{"--store", "file://" + filepath.Join(c.dir, "sessions")}
	}
	env := map[string]string{"postgres": testenv.Postgres, "redis": testenv.Redis, "mongodb": testenv.MongoDB}[backend]
	store := []string{"--store", testenv.URL(t, env), "--namespace", prefix + testenv.RandHex(6)}
	t.Cleanup(func() {
		for _, id := range ids {
			c.run(append(store, "sessions", "delete", id, "--yes")...)
		}
	})
	return store
}

// loadSession returns a session's events as the store holds them, read
// through the backend itself, and checks that they are one valid history.
func loadSession(t *testing.T, storeURL, ns, id string) []cairn.Event {
	t.Helper()
	st, err := cairn.Open(t.Context(), storeURL, cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cairn.NewMemory(rec.Events...); err != nil {
		t.Fatalf("the history is not one valid line: %v", err)
	}
	return rec.Events
}

func countKind(evs []cairn.Event, k cairn.Kind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// within calls ok every step until it returns true, and reports whether
// it did before limit passed: a guard against a hang, not a measure.
func within(limit, step time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(step)
	}
	return true
}

// waitCompleted waits until every session of ids in st is completed, and
// fails the test naming the first that is not by the deadline, with the
// log of the worker that runs them.
func waitCompleted(t *testing.T, st cairn.Store, deadline time.Time, log *strings.Builder, ids ...string) {
	t.Helper()
	for _, id := range ids {
		var status cairn.Status
		done := within(time.Until(deadline), 50*time.Millisecond, func() bool {
			rec, err := st.Load(t.Context(), id, 0)
			if err != nil {
				t.Fatal(err)
			}
			status = rec.Info.Status
			return status == cairn.StatusCompleted
		})
		if !done {
			t.Fatalf("session %s is %s, want completed; the worker's log:\n%s", id, status, log.String())
		}
	}
}
