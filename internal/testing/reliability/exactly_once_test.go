package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider/script"
)

// The exactly-once scenarios run the cairn command against PostgreSQL,
// Redis and FerretDB through a fault.Proxy, break the network (or the
// process) at a point the store shows, and count what a user would: side
// effects (lines of append_file's file), side effects that ran twice,
// steps recorded twice and acknowledged events lost. All must be 0.

// eoPrompt starts every scenario's run.
const eoPrompt = "Run the script."

// step is one step of a scenario's script: an append_file of its own line
// (side) or a calc (not side), and how long the model takes. Its text is
// 2 KB long, so that a write that carries a model response is told from
// the drivers' small messages by its size.
type step struct {
	side  bool
	delay time.Duration
}

// padding makes each model response of a scenario 2 KB long.
var padding = strings.Repeat(".", 2048)

// steps returns n steps of one kind.
func steps(n int, side bool, delay time.Duration) []step {
	s := make([]step, n)
	for i := range s {
		s[i] = step{side: side, delay: delay}
	}
	return s
}

// eoRig is one scenario on one server backend: a proxy in front of the
// server, the cairn command through it and straight to the server, the
// script and its side-effect file, and a watcher of the session.
type eoRig struct {
	b      *fault.Backend
	px     *fault.Proxy
	st     cairn.Store // straight to the server
	proxy  *cli        // cairn through the proxy
	direct *cli        // cairn straight to the server
	id     string
	side   string
	script string
	steps  []step
	watch  *watcher
}

func newEORig(t *testing.T, name string, plan []step) *eoRig {
	t.Helper()
	b := fault.NewBackend(t, name)
	px := fault.StartProxy(t, b.URL)
	r := &eoRig{
		b: b, px: px, st: b.Direct(t), id: "eo",
		proxy:  newCLI(t, fault.QuickMongo(px.URL(b.URL)), b.NS),
		direct: newCLI(t, fault.QuickMongo(b.URL), b.NS),
		steps:  plan,
	}
	// The scenarios' runs are longer than the default 20 steps.
	for _, c := range []*cli{r.proxy, r.direct} {
		if err := os.WriteFile(filepath.Join(c.dir, "cairn.toml"), []byte("[agent]\nmax_steps = 500\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	r.side = filepath.Join(dir, "side.txt")
	r.script = eoScript(t, dir, r.side, plan)
	r.watch = watchSession(t, r.st, r.id)
	return r
}

// eoScript writes a script of the steps, then "all done". Side step i
// appends the line "l<i>".
func eoScript(t *testing.T, dir, side string, plan []step) string {
	t.Helper()
	var s script.Script
	for i, p := range plan {
		st := script.Step{Text: fmt.Sprintf("step %d %s", i, padding), DelayMS: int(p.delay / time.Millisecond)}
		if p.side {
			args, _ := json.Marshal(map[string]string{"path": side, "line": fmt.Sprintf("l%d", i)})
			st.ToolCalls = []script.Call{{Name: "append_file", Arguments: args}}
		} else {
			st.ToolCalls = []script.Call{{Name: "calc", Arguments: json.RawMessage(fmt.Sprintf(`{"expression":"%d+1"}`, i))}}
		}
		s.Steps = append(s.Steps, st)
	}
	s.Steps = append(s.Steps, script.Step{Text: "all done"})
	return testcheck.WriteScript(t, dir, s)
}

// run starts cairn with args through c.
func (r *eoRig) run(t *testing.T, c *cli, args ...string) *fault.Process {
	t.Helper()
	return fault.Start(t, c.command(r.script, args...))
}

// results returns how many tool results the store holds for the session.
func (r *eoRig) results() (int, error) { return count(r.st, r.id, cairn.KindToolResult) }

// count returns how many events of kind the store holds for session id.
func count(st cairn.Store, id string, kind cairn.Kind) (int, error) {
	rec, err := st.Load(context.Background(), id, 0)
	if errors.Is(err, cairn.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range rec.Events {
		if e.Kind == kind {
			n++
		}
	}
	return n, nil
}

// untilResults waits until the store holds n tool results of the session.
func (r *eoRig) untilResults(t *testing.T, n int) {
	t.Helper()
	fault.Until(t, 2*time.Minute, fmt.Sprintf("%d tool results stored", n), func() (bool, error) {
		got, err := r.results()
		return got >= n, err
	})
}

// untilLeaseExpired waits until the store shows no live lease on the
// session: its holder's lease ran out.
func (r *eoRig) untilLeaseExpired(t *testing.T) time.Duration {
	t.Helper()
	l := r.st.(cairn.Leaser)
	return fault.Until(t, time.Minute, "the holder's lease to run out", func() (bool, error) {
		cur, err := l.CurrentLease(context.Background(), r.id)
		return err == nil && cur.Holder == "", err
	})
}

// untilStderr waits until the process has written s to stderr, or fails
// the test when it ends without.
func untilStderr(t *testing.T, p *fault.Process, s string) {
	t.Helper()
	fault.Until(t, time.Minute, fmt.Sprintf("%q on stderr", s), func() (bool, error) {
		if strings.Contains(p.Stderr(), s) {
			return true, nil
		}
		select {
		case <-p.Done():
			return false, fmt.Errorf("the process ended without it: %s", p.Wait())
		default:
			return false, nil
		}
	})
}

// wantExit checks a process's exit status and that its stderr holds each
// of msgs.
func wantExit(t *testing.T, who string, e fault.Exit, code int, msgs ...string) {
	t.Helper()
	if e.Code != code {
		t.Errorf("%s: %s; want exit %d", who, e, code)
		return
	}
	for _, m := range msgs {
		if !strings.Contains(e.Stderr, m) {
			t.Errorf("%s: stderr does not say %q:\n%s", who, m, e.Stderr)
		}
	}
}

// watcher reads the session every few milliseconds, straight from the
// server, and keeps every event it saw: each was acknowledged by the store
// to whoever wrote it, so the final history must hold it at the same seq.
type watcher struct {
	mu   sync.Mutex
	seen map[int64][]byte
	stop chan struct{}
	done chan struct{}
}

func watchSession(t *testing.T, st cairn.Store, id string) *watcher {
	w := &watcher{seen: map[int64][]byte{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			if rec, err := st.Load(context.Background(), id, 0); err == nil {
				w.mu.Lock()
				for _, e := range rec.Events {
					if _, ok := w.seen[e.Seq]; !ok {
						w.seen[e.Seq], _ = json.Marshal(e)
					}
				}
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(w.close)
	return w
}

func (w *watcher) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// lost returns how many events the watcher saw that the final history does
// not hold at the same seq, byte for byte.
func (w *watcher) lost(final []cairn.Event) (lost, seen int) {
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	for seq, b := range w.seen {
		if seq < 1 || seq > int64(len(final)) {
			lost++
			continue
		}
		got, _ := json.Marshal(final[seq-1])
		if !bytes.Equal(got, b) {
			lost++
		}
	}
	return lost, len(w.seen)
}

// tally is what a scenario counts once the session is completed.
type tally struct {
	sideEffects int // lines of the side file
	twice       int // lines written more than once
	dupSteps    int // model responses of one script step recorded twice
	lost        int // acknowledged events missing from the final history
	unrecorded  int // side effects with no tool.started of theirs in the history
	unknown     int // append_file calls answered "outcome unknown"
	seen        int // events the watcher saw
}

func (c tally) String() string {
	return fmt.Sprintf("%d side effects, %d twice, %d steps recorded twice, %d of %d acknowledged events lost, %d side effects unrecorded, %d outcome unknown",
		c.sideEffects, c.twice, c.dupSteps, c.lost, c.seen, c.unrecorded, c.unknown)
}

// check loads the session, checks that it completed with a valid history,
// counts, and fails the test unless every bad count is 0. It returns the
// counts for the test's log.
func (r *eoRig) check(t *testing.T) tally {
	t.Helper()
	events, state := testcheck.LoadValid(t, r.st, r.id)
	if state.Status != cairn.StatusCompleted || state.Output != "all done" {
		t.Errorf("session %s: status %s, output %q; want completed, \"all done\"", r.id, state.Status, state.Output)
	}
	testcheck.History(t, state.Messages)
	var c tally
	c.lost, c.seen = r.watch.lost(events)
	started := map[string]bool{} // lines whose append_file start is stored
	texts := map[string]int{}
	results := map[string]int{}
	for _, v := range testcheck.Decode(t, events) {
		switch d := v.(type) {
		case *cairn.ModelResponse:
			texts[d.Text]++
		case *cairn.ToolStarted:
			var a struct{ Line string }
			_ = json.Unmarshal(d.Args, &a)
			started[a.Line] = true
		case *cairn.ToolResult:
			results[d.CallID]++
			if d.Output == agent.OutcomeUnknown {
				c.unknown++
			}
		}
	}
	for _, n := range texts {
		c.dupSteps += n - 1
	}
	for id, n := range results {
		if n > 1 {
			t.Errorf("tool call %s has %d results", id, n)
		}
	}
	lines := testcheck.SideLines(t, r.side)
	counts := map[string]int{}
	for _, l := range lines {
		counts[l]++
		if !started[l] {
			c.unrecorded++
		}
	}
	c.sideEffects = len(lines)
	for _, n := range counts {
		c.twice += n - 1
	}
	if c.twice != 0 || c.dupSteps != 0 || c.lost != 0 || c.unrecorded != 0 {
		t.Errorf("%s: %s; want 0 twice, 0 recorded twice, 0 lost, 0 unrecorded\nside file: %v", r.b.Name, c, lines)
	}
	if want := r.sideSteps() - c.unknown; c.sideEffects < want {
		t.Errorf("%s: %d side effects, want at least %d (%d append_file steps, %d of unknown outcome)", r.b.Name, c.sideEffects, want, r.sideSteps(), c.unknown)
	}
	return c
}

// sideSteps returns how many steps of the script are side effects.
func (r *eoRig) sideSteps() int {
	n := 0
	for _, s := range r.steps {
		if s.side {
			n++
		}
	}
	return n
}
