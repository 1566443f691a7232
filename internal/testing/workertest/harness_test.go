//go:build unix

package workertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/rediscluster"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	_ "github.com/cairnhq/cairn/store/all"
)

// cairnBin is the cairn command built once for the package's tests.
var cairnBin string

func TestMain(m *testing.M) {
	testenv.QuickRaceExit()
	dir, err := os.MkdirTemp("", "cairn-workertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cairnBin = filepath.Join(dir, "cairn")
	build := exec.Command("go", "build", "-o", cairnBin, "github.com/cairnhq/cairn/cmd/cairn")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the cairn command:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if err := checkLeftovers(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	rediscluster.StopShared()
	os.Exit(code)
}

// env is one test's store, namespace and script.
type env struct {
	t        *testing.T
	storeURL string
	ns       string
	script   string
	dir      string
}

// scriptSteps is the script every queued session runs: two tool calls and
// an answer, each after delayMS of simulated model latency.
func newEnv(t *testing.T, storeURL string, delayMS int) *env {
	dir := t.TempDir()
	steps := []map[string]any{
		{"tool_calls": []map[string]any{{"name": "calc", "arguments": map[string]string{"expression": "2*(3+4)"}}}, "delay_ms": delayMS},
		{"tool_calls": []map[string]any{{"name": "remember", "arguments": map[string]any{"key": "k", "value": 1}}}, "delay_ms": delayMS},
		{"text": "done", "delay_ms": delayMS},
	}
	b, err := json.Marshal(map[string]any{"steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, b, 0o644); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, storeURL: storeURL, ns: "wt_" + testenv.RandHex(6), script: script, dir: dir}
	eraseLater(t, storeURL, e.ns) // runs last: after the workers are stopped
	return e
}

func (e *env) args(a ...string) []string {
	return append([]string{"--store", e.storeURL, "--namespace", e.ns, "--model", "script:" + e.script}, a...)
}

// enqueue queues n runs with `cairn run --detach`, four processes at a
// time, and returns the session IDs.
func (e *env) enqueue(n int) []string {
	e.t.Helper()
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cmd := exec.Command(cairnBin, e.args("run", "--detach", fmt.Sprintf("task %d", i))...)
			cmd.Dir = e.dir
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("run --detach: %v: %s", err, stderr.String())
				return
			}
			ids[i] = strings.TrimSpace(out.String())
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			e.t.Fatal(err)
		}
	}
	return ids
}

// workerProc is one `cairn worker` process and its log.
type workerProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has exited
	err  error         // its exit, once done is closed
}

// wait waits for the process to exit and returns how it exited.
func (w *workerProc) wait() error {
	<-w.done
	return w.err
}

func (e *env) startWorker(name string, concurrency int, lease time.Duration) *workerProc {
	e.t.Helper()
	logPath := filepath.Join(e.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(cairnBin, e.args("worker", "--name", name, "-n", fmt.Sprint(concurrency),
		"--lease", lease.String(), "--poll", "100ms")...)
	cmd.Dir = e.dir
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		e.t.Fatal(err)
	}
	w := &workerProc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { w.err = cmd.Wait(); f.Close(); close(w.done) }()
	e.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-w.done
	})
	return w
}

// logLine is one claimed, finished or lost line of a worker's log.
type logLine struct {
	worker, msg, session string
	token                int64
}

var lineRE = regexp.MustCompile(`msg=("[^"]*"|\S+) worker=(\S+) session=(\S+) token=(\d+)`)

func (w *workerProc) lines(t *testing.T) []logLine {
	t.Helper()
	b, err := os.ReadFile(w.log)
	if err != nil {
		t.Fatal(err)
	}
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		m := lineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var tok int64
		fmt.Sscan(m[4], &tok)
		out = append(out, logLine{worker: m[2], msg: strings.Trim(m[1], `"`), session: m[3], token: tok})
	}
	return out
}

// running returns the sessions the worker has claimed and not yet left.
func (w *workerProc) running(t *testing.T) []string {
	open := map[string]bool{}
	for _, l := range w.lines(t) {
		if l.msg == "claimed" {
			open[l.session] = true
		} else {
			delete(open, l.session)
		}
	}
	var out []string
	for s := range open {
		out = append(out, s)
	}
	return out
}

// waitFor polls cond every 50 ms until it holds or the deadline passes.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openStore opens the test's store through the library.
func (e *env) openStore() cairn.Store {
	e.t.Helper()
	st, err := cairn.Open(context.Background(), e.storeURL, cairn.StoreOptions{Namespace: e.ns})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

// status returns the stored status of session id.
func status(t *testing.T, st cairn.Store, id string) cairn.Status {
	t.Helper()
	rec, err := st.Load(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Info.Status
}

// responses counts the model responses stored in session id.
func responses(t *testing.T, st cairn.Store, id string) int {
	t.Helper()
	rec, err := st.Load(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range rec.Events {
		if e.Kind == cairn.KindModelResponse {
			n++
		}
	}
	return n
}

// completed counts the namespace's completed sessions.
func completed(t *testing.T, st cairn.Store) int {
	page, err := st.List(context.Background(), cairn.ListOptions{Status: []cairn.Status{cairn.StatusCompleted}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Sessions)
}
