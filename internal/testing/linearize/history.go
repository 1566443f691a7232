package linearize

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// Recorder takes the calls and returns of operations as they happen.
type Recorder interface {
	// Call records that client made the call in (its Start set) and
	// returns the call's number for Return.
	Call(in Input) int
	// Return records how call n ended; end is when.
	Return(n int, out Output, end int64)
}

// History is a Recorder that keeps the operations in memory. It is safe
// for concurrent use.
type History struct {
	mu   sync.Mutex
	ops  []record
	seen map[string]bool // the event IDs some Load returned
}

type record struct {
	in       Input
	out      Output
	returned bool
}

// Call implements Recorder.
func (h *History) Call(in Input) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, record{in: in})
	return len(h.ops) - 1
}

// Return implements Recorder.
func (h *History) Return(n int, out Output, end int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(out.IDs) > 0 {
		if h.seen == nil {
			h.seen = map[string]bool{}
		}
		for _, id := range out.IDs {
			h.seen[id] = true
		}
		out.IDs = nil // kept once, in seen: a long run loads long histories
	}
	h.ops[n].out, h.ops[n].returned = out, true
	h.ops[n].in.End = end
}

// Abandon ends every call of client that has not returned as Unknown at
// end: the client's process died (a SIGKILL) and whatever it was doing
// may or may not have been applied.
func (h *History) Abandon(client int, end int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for i := range h.ops {
		if r := &h.ops[i]; r.in.Client == client && !r.returned {
			r.out, r.returned, r.in.End = Output{Result: Unknown, Err: "the process was killed"}, true, end
			n++
		}
	}
	return n
}

// Stats counts a history's operations.
type Stats struct {
	Ops     int            // operations checked (calls that returned, or may have been applied)
	Unknown int            // of which the outcome is unknown
	Unseen  int            // calls of unknown outcome left out (see Level)
	ByKind  map[Kind]int   // operations by kind
	Results map[Result]int // operations by result
	// NotOutages counts the errors of unknown outcomes that
	// cairn.IsUnavailable does not call an outage (up to 20 distinct).
	NotOutages map[string]int
	// Outages counts the errors of unknown outcomes that are outages, their
	// numbers (ports, addresses, times) replaced by "#" (up to 20 distinct).
	Outages map[string]int
}

// Level says which appends of unknown outcome Operations leaves out.
type Level int

// Levels of Operations, from the smallest history to the whole.
const (
	// Known leaves out every call of unknown outcome.
	Known Level = iota
	// Unseen leaves out every append of unknown outcome none of whose
	// events any Load returned.
	Unseen
	// Unexplaining leaves out those of them that cannot explain another
	// append's answer either: no conflict at their seq, and no success at
	// the seq after their events, answered after their call.
	Unexplaining
	// Whole leaves nothing out.
	Whole
)

// Operations returns the history in porcupine's form and its figures. A
// call whose outcome is unknown gets the return time +∞: the checker may
// apply it at any point after its call, or never (applied after every
// other operation, it is seen by none). A Load that got no answer is left
// out: it changed nothing and showed nothing.
//
// Below Whole, calls of unknown outcome are left out as level says. That
// keeps the search small (each such call doubles the orders to try) and is
// sound one way: if the reduced history is linearizable, so is the whole,
// since the calls left out can come after every other operation (their
// return is +∞, and the model accepts a call of unknown outcome in any
// state), where they are seen by none. A reduced history that is not
// linearizable says nothing of the whole.
func (h *History) Operations(level Level) ([]porcupine.Operation, Stats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Stats{ByKind: map[Kind]int{}, Results: map[Result]int{}, NotOutages: map[string]int{}, Outages: map[string]int{}}
	type at struct {
		session string
		seq     int64
		res     Result
	}
	answered := map[at]int64{} // the latest return of an append's answer at a seq
	for _, r := range h.ops {
		if r.in.Kind == Append && (r.out.Result == Conflict || r.out.Result == OK) {
			k := at{r.in.Session, r.in.ExpectSeq, r.out.Result}
			answered[k] = max(answered[k], r.in.End)
		}
	}
	leaveOut := func(r record) bool {
		if level == Known && r.out.Result == Unknown {
			return true
		}
		if level == Whole || r.in.Kind != Append || r.out.Result != Unknown ||
			slices.ContainsFunc(r.in.Events, func(id string) bool { return h.seen[id] }) {
			return false
		}
		k := int64(len(r.in.Events))
		explains := answered[at{r.in.Session, r.in.ExpectSeq, Conflict}] >= r.in.Start ||
			answered[at{r.in.Session, r.in.ExpectSeq + k, OK}] >= r.in.Start
		return level == Unseen || !explains
	}
	var ops []porcupine.Operation
	for _, r := range h.ops {
		if !r.returned {
			r.out, r.in.End = Output{Result: Unknown, Err: "no return recorded"}, r.in.Start
		}
		if r.in.Kind == Load && r.out.Result == Unknown {
			continue
		}
		if leaveOut(r) {
			st.Unseen++
			continue
		}
		ret := r.in.End
		if r.out.Result == Unknown {
			ret = math.MaxInt64
			st.Unknown++
			if msg, ok := strings.CutPrefix(r.out.Err, notOutage); ok {
				if _, seen := st.NotOutages[msg]; seen || len(st.NotOutages) < 20 {
					st.NotOutages[msg]++
				}
			} else if msg := digits.ReplaceAllString(r.out.Err, "#"); st.Outages[msg] > 0 || len(st.Outages) < 20 {
				st.Outages[msg]++
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: r.in.Client, Input: r.in, Call: r.in.Start, Output: r.out, Return: ret})
		st.Ops++
		st.ByKind[r.in.Kind]++
		st.Results[r.out.Result]++
	}
	return ops, st
}

// digits matches the numbers of an error message.
var digits = regexp.MustCompile(`[0-9]+`)

// Len returns how many calls were recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Verdict is the result of checking a history.
type Verdict struct {
	Result porcupine.CheckResult // Ok, Illegal, or Unknown when the check timed out or gave up
	Level  Level                 // the reduction the result is of
	Stats  Stats
	Took   time.Duration
	// Illegal lists, for each session whose history no order explains,
	// the longest partial order the checker found and the operations it
	// could not place after it.
	Illegal []string
	// Reduced is Illegal for the largest reduction that was not
	// linearizable (ReducedLevel), when the next one was not decided
	// (Unknown): a violation if the calls left out do not explain it.
	Reduced      []string
	ReducedLevel Level
	// Visualization is porcupine's HTML view of the history, written when
	// the result is not Ok and a folder for it was given; Listing, beside
	// it, lists the operations of each session in call order.
	Visualization, Listing string
}

// Check checks the history against Model, each try for at most timeout
// (0: no limit), and gives up (Unknown) when the checker's memory passes
// maxHeap bytes (0: no limit). It checks the reductions in order, Known,
// Unseen, Unexplaining, then the Whole history, and stops at the first
// that is linearizable: only the whole history proves a violation. When the
// history is not linearizable and dir is not empty, porcupine's
// visualization and a listing are written there.
func (h *History) Check(timeout time.Duration, maxHeap uint64, dir string) Verdict {
	begin := time.Now()
	var (
		v    Verdict
		ops  []porcupine.Operation
		info porcupine.LinearizationInfo
	)
	for level := Known; level <= Whole; level++ {
		var st Stats
		ops, st = h.Operations(level)
		if level > Known && st.Unseen == v.Stats.Unseen {
			continue // the same history as the level before
		}
		v.Stats, v.Level = st, level
		v.Result, info = check(ops, timeout, maxHeap)
		if v.Result == porcupine.Illegal {
			v.Reduced, v.ReducedLevel = explain(info, ops), level
		}
		if v.Result != porcupine.Illegal {
			break
		}
	}
	v.Took = time.Since(begin)
	if v.Result != porcupine.Illegal {
		if v.Result == porcupine.Ok {
			v.Reduced = nil
		}
		return v
	}
	model := Model()
	v.Illegal = explain(info, ops)
	if dir != "" {
		base := filepath.Join(dir, fmt.Sprintf("linearize-%d", time.Now().UnixNano()))
		if f, err := os.Create(base + ".html"); err == nil {
			if porcupine.Visualize(model, info, f) == nil {
				v.Visualization = base + ".html"
			}
			f.Close()
		}
		var b strings.Builder
		for _, part := range partition(ops) {
			part = slices.Clone(part)
			slices.SortFunc(part, func(a, b porcupine.Operation) int { return compare(a.Call, b.Call) })
			fmt.Fprintf(&b, "session %s\n", part[0].Input.(Input).Session)
			for _, op := range part {
				fmt.Fprintf(&b, "  %s\n", opLine(op))
			}
		}
		if os.WriteFile(base+".txt", []byte(b.String()), 0o644) == nil {
			v.Listing = base + ".txt"
		}
	}
	return v
}

// explain names, for each session whose operations no order explains,
// the end of the longest order the checker found and the first operations
// (by call time) it could not place after it.
func explain(info porcupine.LinearizationInfo, ops []porcupine.Operation) []string {
	var out []string
	parts := partition(ops) // the model's partition: the same sessions, in the same order
	for p, partials := range info.PartialLinearizationsOperations() {
		all := parts[p]
		var best []porcupine.Operation
		for _, l := range partials {
			if len(l) > len(best) {
				best = l
			}
		}
		if len(best) == len(all) {
			continue
		}
		session := all[0].Input.(Input).Session
		msg := fmt.Sprintf("session %s: %d operations; the longest order the checker found places %d, ending with:", session, len(all), len(best))
		for _, op := range best[max(0, len(best)-8):] {
			msg += "\n    " + opLine(op)
		}
		placed := map[string]bool{}
		for _, op := range best {
			placed[opLine(op)] = true
		}
		var left []porcupine.Operation
		for _, op := range all {
			if !placed[opLine(op)] {
				left = append(left, op)
			}
		}
		slices.SortFunc(left, func(a, b porcupine.Operation) int { return compare(a.Call, b.Call) })
		msg += "\n  and no operation left can come next; the first of them by call time:"
		for _, op := range left[:min(len(left), 6)] {
			msg += "\n    " + opLine(op)
		}
		out = append(out, msg)
	}
	return out
}

func opLine(op porcupine.Operation) string {
	ret := "∞"
	if op.Return != math.MaxInt64 {
		ret = time.Unix(0, op.Return).Format("15:04:05.000000")
	}
	return fmt.Sprintf("[%s – %s] %s", time.Unix(0, op.Call).Format("15:04:05.000000"), ret, describe(op.Input, op.Output))
}

func compare(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// line is one record of a history streamed by a client in another
// process: a call (In set) or a return (Out set) of call N.
type line struct {
	N   int     `json:"n"`
	In  *Input  `json:"in,omitempty"`
	Out *Output `json:"out,omitempty"`
	End int64   `json:"end,omitempty"`
}

// Stream is a Recorder that writes each call and return as a line of JSON,
// for a client in a child process; ReadStream in the parent feeds them to
// a History. Each line is written before the call is made or as soon as it
// returns, so that a SIGKILL loses no call that reached the store.
type Stream struct {
	mu   sync.Mutex
	w    io.Writer
	n    int
	sent map[string]bool // event IDs of loads already written: only new ones go out
}

// NewStream returns a Stream writing to w (unbuffered: each line is one
// write).
func NewStream(w io.Writer) *Stream { return &Stream{w: w} }

// Call implements Recorder.
func (s *Stream) Call(in Input) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.write(line{N: s.n, In: &in})
	return s.n
}

// Return implements Recorder.
func (s *Stream) Return(n int, out Output, end int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(out.IDs) > 0 {
		if s.sent == nil {
			s.sent = map[string]bool{}
		}
		ids := out.IDs[:0:0]
		for _, id := range out.IDs {
			if !s.sent[id] {
				s.sent[id] = true
				ids = append(ids, id)
			}
		}
		out.IDs = ids
	}
	s.write(line{N: n, Out: &out, End: end})
}

func (s *Stream) write(l line) {
	b, _ := json.Marshal(l)
	_, _ = s.w.Write(append(b, '\n'))
}

// ReadStream reads a child's Stream from r into h until r ends, and
// returns the number of lines it read. The calls it finds open at the end
// stay open: Abandon closes them.
func ReadStream(r io.Reader, h *History) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	calls := map[int]int{}
	n := 0
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			continue // a line the test framework wrote, or one cut short by the kill
		}
		n++
		switch {
		case l.In != nil:
			calls[l.N] = h.Call(*l.In)
		case l.Out != nil:
			if i, ok := calls[l.N]; ok {
				h.Return(i, *l.Out, l.End)
				delete(calls, l.N)
			}
		}
	}
	return n, sc.Err()
}

// check runs porcupine on ops with a guard: when the heap passes maxHeap
// the model refuses every step, the search ends at once, and the result
// is Unknown.
func check(ops []porcupine.Operation, timeout time.Duration, maxHeap uint64) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	var abort atomic.Bool
	done := make(chan struct{})
	if maxHeap > 0 {
		go func() {
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
				}
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > maxHeap {
					abort.Store(true)
					return
				}
			}
		}()
	}
	res, info := porcupine.CheckOperationsVerbose(model(&abort), ops, timeout)
	close(done)
	if abort.Load() {
		return porcupine.Unknown, info
	}
	return res, info
}
