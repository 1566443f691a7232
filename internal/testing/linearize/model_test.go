package linearize

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// ms is a time of a made-up history: n milliseconds after its start.
func ms(n int) int64 { return int64(n) * int64(time.Millisecond) }

// op is one operation of a made-up history on session "s", called at call
// and returned at ret (milliseconds; ret < 0: unknown outcome).
func op(call, ret int, in Input, out Output) porcupine.Operation {
	in.Session, in.Start = "s", ms(call)
	r := ms(ret)
	if ret < 0 {
		out.Result, r = Unknown, math.MaxInt64
		in.End = ms(call + 50) // when the caller gave up
	} else {
		in.End = r
	}
	return porcupine.Operation{ClientId: in.Client, Input: in, Call: ms(call), Output: out, Return: r}
}

func create(call, ret int, res Result) porcupine.Operation {
	return op(call, ret, Input{Kind: Create}, Output{Result: res})
}

func appendEv(call, ret int, expect int64, res Result, ids ...string) porcupine.Operation {
	return op(call, ret, Input{Kind: Append, ExpectSeq: expect, Events: ids}, Output{Result: res})
}

func fenced(call, ret int, token, expect int64, res Result, ids ...string) porcupine.Operation {
	return op(call, ret, Input{Kind: Append, ExpectSeq: expect, Events: ids, Fenced: true, Token: token}, Output{Result: res})
}

// load is a Load that saw ids.
func load(call, ret int, ids ...string) porcupine.Operation {
	return op(call, ret, Input{Kind: Load}, Output{Result: OK, LastSeq: int64(len(ids)), Digest: Digest(0, ids...), Tail: strings.Join(ids, ",")})
}

// gone is a Load that found no session.
func gone(call, ret int) porcupine.Operation {
	return op(call, ret, Input{Kind: Load}, Output{Result: NotFound})
}

func del(call, ret int, res Result) porcupine.Operation {
	return op(call, ret, Input{Kind: Delete}, Output{Result: res})
}

// lease calls; the TTL is 100 ms.
func acquire(call, ret int, res Result, token int64) porcupine.Operation {
	return op(call, ret, Input{Kind: Acquire, Holder: "h", TTL: 100 * time.Millisecond}, Output{Result: res, Token: token})
}

func takeover(call, ret int, res Result, token int64) porcupine.Operation {
	return op(call, ret, Input{Kind: Takeover, Holder: "h", TTL: 100 * time.Millisecond}, Output{Result: res, Token: token})
}

func renew(call, ret int, token int64, res Result) porcupine.Operation {
	out := Output{Result: res}
	if res == OK {
		out.Token = token
	}
	return op(call, ret, Input{Kind: Renew, Token: token, TTL: 100 * time.Millisecond}, out)
}

func release(call, ret int, token int64, res Result) porcupine.Operation {
	return op(call, ret, Input{Kind: Release, Token: token}, Output{Result: res})
}

// TestModel checks the model on small histories, each legal or not by the
// contract of cairn.Store and cairn.Leaser.
func TestModel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		legal bool
		ops   []porcupine.Operation
	}{
		{"appends in order, then a load", true, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 3, 0, OK, "a", "b"), appendEv(4, 5, 2, OK, "c"), load(6, 7, "a", "b", "c"),
		}},
		{"a load misses an acknowledged append", false, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 3, 0, OK, "a"), load(4, 5),
		}},
		{"a load sees the events in another order", false, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 3, 0, OK, "a", "b"), load(4, 5, "b", "a"),
		}},
		{"a conflict at the session's last seq", false, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 3, 0, Conflict, "a"), load(4, 5),
		}},
		{"two appends at one seq both succeed", false, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 10, 0, OK, "a"), appendEv(3, 9, 0, OK, "b"),
		}},
		{"two concurrent appends at one seq, one wins", true, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 10, 0, OK, "a"), appendEv(3, 9, 0, Conflict, "b"), load(11, 12, "a"),
		}},
		{"a retried append is already done", true, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 3, 0, OK, "a", "b"), appendEv(4, 5, 0, OK, "a", "b"), load(6, 7, "a", "b"),
		}},
		{"a retry after another append is already done", true, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 3, 0, OK, "a"), appendEv(4, 5, 1, OK, "b"), appendEv(6, 7, 0, OK, "a"), load(8, 9, "a", "b"),
		}},
		{"a retry after another append conflicts, its events stored", false, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 3, 0, OK, "a"), appendEv(4, 5, 1, OK, "b"), appendEv(6, 7, 0, Conflict, "a"),
		}},
		{"a partial match is no retry", true, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 3, 0, OK, "a", "b"), appendEv(4, 5, 2, OK, "c"), appendEv(6, 7, 0, Conflict, "a", "x"),
		}},
		{"a retry of other events at a stale seq succeeds", false, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 3, 0, OK, "a"), appendEv(4, 5, 0, OK, "x"),
		}},
		{"an append of unknown outcome that landed", true, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, -1, 0, Unknown, "a"), load(3, 4), load(100, 101, "a"),
		}},
		{"an append of unknown outcome that never landed", true, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, -1, 0, Unknown, "a"), appendEv(100, 101, 0, OK, "b"), load(102, 103, "b"),
		}},
		{"events of an unknown append seen, then gone", false, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, -1, 0, Unknown, "a"), load(100, 101, "a"), load(102, 103),
		}},
		{"a conflict explained by an append of unknown outcome", true, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, -1, 0, Unknown, "a"), appendEv(100, 101, 0, Conflict, "b"), load(102, 103, "a"),
		}},
		{"a conflict, then the seq unchanged", false, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, -1, 0, Unknown, "a"), appendEv(100, 101, 0, Conflict, "b"), load(102, 103),
		}},
		{"an append after a delete", false, []porcupine.Operation{
			create(0, 1, OK), del(2, 3, OK), appendEv(4, 5, 0, OK, "a"),
		}},
		{"an append after a delete is not found", true, []porcupine.Operation{
			create(0, 1, OK), del(2, 3, OK), appendEv(4, 5, 0, NotFound, "a"), gone(6, 7),
		}},
		{"delete, create again, append", true, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 3, 0, OK, "a"), del(4, 5, OK), gone(6, 7), create(8, 9, OK), appendEv(10, 11, 0, OK, "b"), load(12, 13, "b"),
		}},
		{"create of a session that exists", false, []porcupine.Operation{
			create(0, 1, OK), create(2, 3, OK),
		}},
		{"exists, then not found, with nothing between", false, []porcupine.Operation{
			create(0, 1, OK), del(2, 3, OK), create(4, 5, Exists), gone(6, 7),
		}},
		{"a fenced append with the lease", true, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), fenced(4, 5, 7, 0, OK, "a"), load(6, 7, "a"),
		}},
		{"a fenced append after a takeover", false, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), takeover(4, 5, OK, 8), fenced(6, 7, 7, 0, OK, "a"),
		}},
		{"a fenced append after a takeover is refused", true, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), takeover(4, 5, OK, 8), fenced(6, 7, 7, 0, LeaseLost, "a"), load(8, 9),
		}},
		{"a lost lease that wrote anyway", false, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), takeover(4, 5, OK, 8), fenced(6, 7, 7, 0, LeaseLost, "a"), load(8, 9, "a"),
		}},
		{"wrong lease and wrong seq: either error", true, []porcupine.Operation{
			create(0, 1, OK), appendEv(2, 3, 0, OK, "a"), acquire(4, 5, OK, 7), takeover(6, 7, OK, 8),
			fenced(8, 9, 7, 0, Conflict, "b"), fenced(10, 11, 7, 0, LeaseLost, "c"),
		}},
		{"a retried fenced append with a lost lease is refused", true, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), fenced(4, 5, 7, 0, OK, "a"), takeover(6, 7, OK, 8), fenced(8, 9, 7, 0, LeaseLost, "a"),
		}},
		{"a retried fenced append with a lost lease succeeds", false, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), fenced(4, 5, 7, 0, OK, "a"), takeover(6, 7, OK, 8), fenced(8, 9, 7, 0, OK, "a"),
		}},
		{"a fenced append after a release", false, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), release(4, 5, 7, OK), fenced(6, 7, 7, 0, OK, "a"),
		}},
		{"acquire while a lease is surely live", false, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), acquire(20, 21, OK, 8),
		}},
		{"held once the lease surely expired", false, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), acquire(200, 201, Held, 0),
		}},
		{"near the expiry, held and then acquired", true, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 30, OK, 7), acquire(100, 101, Held, 0), acquire(125, 126, OK, 8),
		}},
		{"acquired at once after a release", true, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), release(4, 5, 7, OK), acquire(6, 7, OK, 8),
		}},
		{"an expired lease nobody took is renewed", true, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), renew(300, 301, 7, OK), acquire(302, 303, Held, 0), fenced(304, 305, 7, 0, OK, "a"),
		}},
		{"a renewal after a takeover", false, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), takeover(4, 5, OK, 8), renew(6, 7, 7, OK),
		}},
		{"a token that does not grow", false, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), takeover(4, 5, OK, 7),
		}},
		{"a token reused after the session was deleted", false, []porcupine.Operation{
			create(0, 1, OK), acquire(2, 3, OK, 7), del(4, 5, OK), create(6, 7, OK), acquire(8, 9, OK, 7),
		}},
		{"an acquire of unknown outcome that took the lease", true, []porcupine.Operation{
			create(0, 1, OK), acquire(2, -1, Unknown, 0), acquire(10, 11, Held, 0), acquire(300, 301, OK, 9),
		}},
		{"an acquire of unknown outcome that did not", true, []porcupine.Operation{
			create(0, 1, OK), acquire(2, -1, Unknown, 0), acquire(10, 11, OK, 9), fenced(12, 13, 9, 0, OK, "a"),
		}},
		{"a load that breaks the contract by itself", false, []porcupine.Operation{
			create(0, 1, OK), op(2, 3, Input{Kind: Load}, Output{Result: Malformed, Err: "a gap"}),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(Model(), tc.ops); got != tc.legal {
				t.Errorf("linearizable: %v, want %v", got, tc.legal)
			}
		})
	}
}

// recorder returns a function that records on h an operation on session
// s, called at ms call and returned at ms ret.
func recorder(h *History) func(call, ret int, in Input, out Output) {
	return func(call, ret int, in Input, out Output) {
		in.Session, in.Start = "s", ms(call)
		n := h.Call(in)
		h.Return(n, out, ms(ret))
	}
}

// createAndLose records the creation of session s at ms 0, then n appends
// at seq 0 of unknown outcome, one a ms from ms 2, lost in an outage and
// never seen.
func createAndLose(rec func(call, ret int, in Input, out Output), n int) {
	rec(0, 1, Input{Kind: Create}, Output{Result: OK})
	for i := range n {
		rec(2+i, 3+i, Input{Kind: Append, ExpectSeq: 0, Events: []string{fmt.Sprint("lost", i)}}, Output{Result: Unknown})
	}
}

// TestHistory_Check checks the reduction of unseen appends of unknown
// outcome and the explanation of a violation.
func TestHistory_Check(t *testing.T) {
	newHistory := func(unknown int) (*History, func(call, ret int, in Input, out Output)) {
		h := &History{}
		rec := recorder(h)
		createAndLose(rec, unknown)
		rec(40, 41, Input{Kind: Append, ExpectSeq: 0, Events: []string{"x"}}, Output{Result: OK})
		rec(42, 43, Input{Kind: Load}, Output{Result: OK, LastSeq: 1, Digest: Digest(0, "x"), IDs: []string{"x"}})
		return h, rec
	}
	// Thirty lost appends: each one the checker would have to try at every
	// point; left out, the history is checked at once.
	h, _ := newHistory(30)
	v := h.Check(time.Minute, 0, "")
	if v.Result != porcupine.Ok || v.Stats.Unseen != 30 || v.Stats.Ops != 3 || v.Level != Known {
		t.Fatalf("verdict %v at level %d, stats %+v; want Ok with the 30 unseen appends left out", v.Result, v.Level, v.Stats)
	}
	// A conflict at the seq they were sent at, and the session still at
	// that seq: one of them landed and was deleted with the session
	// before any load. Left out, the history fails; with them it is
	// linearizable.
	h, rec := newHistory(3)
	rec(44, 45, Input{Kind: Delete}, Output{Result: OK})
	rec(46, 47, Input{Kind: Create}, Output{Result: OK})
	rec(48, 49, Input{Kind: Append, ExpectSeq: 0, Events: []string{"y"}}, Output{Result: Conflict})
	if v := h.Check(time.Minute, 0, ""); v.Result != porcupine.Ok || v.Level != Unexplaining || v.Stats.Unseen != 0 {
		t.Fatalf("verdict %v at level %d, stats %+v; want Ok with the unknown appends kept", v.Result, v.Level, v.Stats)
	}
	// A violation: a load that misses an acknowledged append. Only the
	// whole history proves it.
	h, rec = newHistory(3)
	rec(44, 45, Input{Kind: Load}, Output{Result: OK, LastSeq: 0, Digest: 0})
	v = h.Check(time.Minute, 0, t.TempDir())
	if v.Result != porcupine.Illegal || v.Level != Whole || len(v.Illegal) != 1 || v.Listing == "" || v.Visualization == "" {
		t.Fatalf("verdict %v %q (%s, %s); want Illegal, explained, with a listing and a visualization", v.Result, v.Illegal, v.Listing, v.Visualization)
	}
	if !strings.Contains(v.Illegal[0], "load → ok seq 0") {
		t.Errorf("the explanation does not name the load that saw nothing:\n%s", v.Illegal[0])
	}
}

// TestHistory_CheckGivesUp checks that a search past its bounds (memory
// or time, whichever comes first) ends, as Unknown.
func TestHistory_CheckGivesUp(t *testing.T) {
	h := &History{}
	rec := recorder(h)
	createAndLose(rec, 40)                                                                 // forty lost appends, every order of them tried
	rec(50, 51, Input{Kind: Load}, Output{Result: OK, LastSeq: 1, Digest: Digest(0, "x")}) // no order explains it
	v := h.Check(3*time.Second, 32<<20, "")
	if v.Result != porcupine.Unknown {
		t.Fatalf("verdict %v after %s; want Unknown: the search gave up", v.Result, v.Took)
	}
}
