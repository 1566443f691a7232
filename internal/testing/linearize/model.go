package linearize

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kind names a store operation.
type Kind string

// The operations a history records.
const (
	Create   Kind = "create"   // Store.Create with no labels
	Append   Kind = "append"   // Store.Append, or Leaser.AppendFenced when Input.Fenced
	Load     Kind = "load"     // Store.Load of the whole session
	Delete   Kind = "delete"   // Store.Delete
	Acquire  Kind = "acquire"  // Leaser.Acquire
	Takeover Kind = "takeover" // Leaser.Takeover
	Renew    Kind = "renew"    // Leaser.Renew
	Release  Kind = "release"  // Leaser.Release
)

// Result is how an operation ended.
type Result string

// Results. Unknown is a call that failed without an answer from the store
// (an outage, a timeout, a killed process): it may or may not have been
// applied, and the checker lets it take effect at any moment after its
// call, or never.
const (
	OK        Result = "ok"
	Conflict  Result = "conflict"  // cairn.ErrConflict
	LeaseLost Result = "lost"      // cairn.ErrLeaseLost
	NotFound  Result = "notfound"  // cairn.ErrNotFound
	Exists    Result = "exists"    // cairn.ErrExists
	Held      Result = "held"      // cairn.ErrLeaseHeld
	Unknown   Result = "unknown"   // no answer: possibly applied
	Malformed Result = "malformed" // an answer that breaks the contract by itself (a Load with a gap, say)
)

// Input is one operation as it was called. Start and End are wall-clock
// Unix nanoseconds: when the call was made, and when it returned or was
// given up (a timeout, a killed process). The stores stamp lease expiries
// with their client's wall clock inside that interval, which is what the
// model needs of time.
type Input struct {
	Session   string        `json:"session"`
	Kind      Kind          `json:"kind"`
	Client    int           `json:"client"`
	ExpectSeq int64         `json:"expect_seq,omitempty"` // append
	Events    []string      `json:"events,omitempty"`     // append: the events' IDs (see EventID)
	Fenced    bool          `json:"fenced,omitempty"`     // append: with the lease Token
	Token     int64         `json:"token,omitempty"`      // fenced append, renew, release
	Holder    string        `json:"holder,omitempty"`     // acquire, takeover
	TTL       time.Duration `json:"ttl,omitempty"`        // acquire, takeover, renew
	Start     int64         `json:"start"`
	End       int64         `json:"end"`
}

// Output is what an operation returned.
type Output struct {
	Result  Result   `json:"result"`
	LastSeq int64    `json:"last_seq,omitempty"` // load: the last seq
	Digest  uint64   `json:"digest,omitempty"`   // load: Digest of the events' IDs
	Tail    string   `json:"tail,omitempty"`     // load: the last IDs, for messages
	IDs     []string `json:"ids,omitempty"`      // load: every ID, to tell which unknown appends were seen
	Token   int64    `json:"token,omitempty"`    // acquire, takeover, renew: the lease's token
	Err     string   `json:"err,omitempty"`      // unknown, malformed: the error
}

// maxTail is how many of the last event IDs a Load's output and a state's
// description show.
const maxTail = 4

// Slack is the tolerance of the model's lease clock: stores keep expiries
// to the microsecond (PostgreSQL) or the millisecond (MongoDB).
const Slack = 5 * time.Millisecond

// state is one session as the sequential specification sees it. It is
// comparable, so porcupine's == and a hash work on it.
type state struct {
	exists bool
	n      int64  // last seq
	digest uint64 // Digest of every event ID, in order: it stands for log in Equal
	log    *event // the events, newest first
	lease  lease
	maxTok int64 // the largest token any caller saw for the session
}

// event is one event of a state's log: immutable, shared by the states
// that grew from one another.
type event struct {
	id   string
	seq  int64
	prev *event
}

// push returns log with ids appended after seq n.
func push(log *event, n int64, ids []string) *event {
	for i, id := range ids {
		log = &event{id: id, seq: n + int64(i) + 1, prev: log}
	}
	return log
}

// equal compares states; the digest stands for the log.
func equal(a, b state) bool {
	return a.exists == b.exists && a.n == b.n && a.digest == b.digest && a.lease == b.lease && a.maxTok == b.maxTok
}

// lease is the session's lease as the model knows it.
type lease struct {
	set   bool  // held (live or expired), not released
	token int64 // 0: granted to a call whose reply was lost
	expLo int64 // it expires no sooner than this (wall-clock ns) …
	expHi int64 // … and no later than this
}

// Digest folds event IDs into the digest of a session's events: FNV-1a of
// each ID and a separator, chained.
func Digest(prev uint64, ids ...string) uint64 {
	for _, id := range ids {
		h := fnv.New64a()
		var b [8]byte
		for i := range 8 {
			b[i] = byte(prev >> (8 * i))
		}
		h.Write(b[:])
		h.Write([]byte(id))
		prev = h.Sum64()
	}
	return prev
}

// holds reports whether the session holds exactly ids at the seqs after
// expectSeq.
func (s state) holds(expectSeq int64, ids []string) bool {
	last := expectSeq + int64(len(ids))
	if last > s.n {
		return false
	}
	e := s.log
	for e != nil && e.seq > last {
		e = e.prev
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if e == nil || e.id != ids[i] {
			return false
		}
		e = e.prev
	}
	return true
}

// tail returns the last maxTail event IDs, joined with ",".
func (s state) tail() string {
	var ids []string
	for e := s.log; e != nil && len(ids) < maxTail; e = e.prev {
		ids = append(ids, e.id)
	}
	slices.Reverse(ids)
	return strings.Join(ids, ",")
}

// heldBy reports whether the session's lease is set and token is its
// token (no lease has token 0).
func (s state) heldBy(token int64) bool {
	return s.lease.set && s.lease.token == token && token != 0
}

// Model is the sequential specification of a session of a cairn store
// (cairn.Store and cairn.Leaser, store.go and lease.go), partitioned by
// session. It is nondeterministic where the specification is: a lease
// that may or may not have expired by the time a call was stamped, and a
// call whose outcome is unknown.
func Model() porcupine.Model { return model(nil) }

// model is Model; once abort is set, it refuses every step.
func model(abort *atomic.Bool) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partition,
		Init:      func() []any { return []any{state{}} },
		Step: func(st, in, out any) []any {
			if abort != nil && abort.Load() {
				return nil
			}
			return step(st.(state), in.(Input), out.(Output))
		},
		Equal: func(a, b any) bool { return equal(a.(state), b.(state)) },
		Hash: func(st any) uint64 {
			s := st.(state)
			return Digest(s.digest, fmt.Sprint(s.exists, s.n, s.lease, s.maxTok))
		},
		DescribeOperation: describe,
		DescribeState: func(st any) string {
			s := st.(state)
			if !s.exists {
				return "no session"
			}
			l := "no lease"
			if s.lease.set {
				l = fmt.Sprintf("lease token %d", s.lease.token)
			}
			return fmt.Sprintf("seq %d […%s], %s", s.n, s.tail(), l)
		},
	}
	return nm.ToModel()
}

func partition(h []porcupine.Operation) [][]porcupine.Operation {
	by := map[string][]porcupine.Operation{}
	var order []string
	for _, op := range h {
		id := op.Input.(Input).Session
		if _, ok := by[id]; !ok {
			order = append(order, id)
		}
		by[id] = append(by[id], op)
	}
	out := make([][]porcupine.Operation, 0, len(order))
	for _, id := range order {
		out = append(out, by[id])
	}
	return out
}

func describe(in, out any) string {
	i, o := in.(Input), out.(Output)
	var b strings.Builder
	fmt.Fprintf(&b, "c%d %s", i.Client, i.Kind)
	switch i.Kind {
	case Append:
		fmt.Fprintf(&b, "(@%d %s", i.ExpectSeq, strings.Join(i.Events, " "))
		if i.Fenced {
			fmt.Fprintf(&b, " token %d", i.Token)
		}
		b.WriteString(")")
	case Renew, Release:
		fmt.Fprintf(&b, "(token %d)", i.Token)
	case Acquire, Takeover:
		fmt.Fprintf(&b, "(%s, %s)", i.Holder, i.TTL)
	}
	fmt.Fprintf(&b, " → %s", o.Result)
	switch {
	case i.Kind == Load && o.Result == OK:
		fmt.Fprintf(&b, " seq %d […%s]", o.LastSeq, o.Tail)
	case o.Token != 0:
		fmt.Fprintf(&b, " token %d", o.Token)
	case o.Err != "":
		fmt.Fprintf(&b, " (%s)", o.Err)
	}
	return b.String()
}

// step returns the states a session in st can be in after the call in
// returned out; none when it cannot have returned that.
func step(st state, in Input, out Output) []any {
	if out.Result == Malformed {
		return nil
	}
	unknown := out.Result == Unknown
	switch in.Kind {
	case Create:
		switch {
		case !st.exists && (unknown || out.Result == OK):
			return []any{state{exists: true, maxTok: st.maxTok}}
		case st.exists && (unknown || out.Result == Exists):
			return []any{st}
		}
	case Delete:
		switch {
		case st.exists && (unknown || out.Result == OK):
			return []any{state{maxTok: st.maxTok}}
		case !st.exists && (unknown || out.Result == NotFound):
			return []any{st}
		}
	case Load:
		switch {
		case !st.exists:
			if out.Result == NotFound {
				return []any{st}
			}
		case out.Result == OK && out.LastSeq == st.n && out.Digest == st.digest:
			return []any{st}
		}
	case Append:
		return appendStep(st, in, out)
	case Acquire, Takeover:
		return acquireStep(st, in, out)
	case Renew:
		switch {
		case !st.exists:
			return missing(st, out)
		case st.heldBy(in.Token):
			if unknown || (out.Result == OK && out.Token == in.Token) {
				next := st
				next.lease.expLo, next.lease.expHi = in.Start+int64(in.TTL), in.End+int64(in.TTL)
				return []any{next}
			}
		case unknown || out.Result == LeaseLost:
			return []any{st}
		}
	case Release:
		switch {
		case !st.exists:
			return missing(st, out)
		case st.heldBy(in.Token):
			if unknown || out.Result == OK {
				next := st
				next.lease = lease{}
				return []any{next}
			}
		case unknown || out.Result == LeaseLost:
			return []any{st}
		}
	}
	return nil
}

// missing is the step of a call on a session that does not exist: it
// returned NotFound (or its outcome is unknown) and changed nothing.
func missing(st state, out Output) []any {
	if out.Result == Unknown || out.Result == NotFound {
		return []any{st}
	}
	return nil
}

// appendStep is Append and AppendFenced: all or nothing, at expectSeq
// only; a retry of events the session holds at the seqs given already done
// (whether or not others followed them); and for a fenced append the
// lease still the caller's.
func appendStep(st state, in Input, out Output) []any {
	unknown := out.Result == Unknown
	if !st.exists {
		return missing(st, out)
	}
	k := int64(len(in.Events))
	fenceOK := !in.Fenced || st.heldBy(in.Token)
	var want Result
	next := st
	switch {
	case in.ExpectSeq == st.n:
		want = OK
		next.n += k
		next.digest = Digest(st.digest, in.Events...)
		next.log = push(st.log, st.n, in.Events)
	case st.holds(in.ExpectSeq, in.Events):
		want = OK // a retried append: already done, nothing written
	default:
		want = Conflict
	}
	switch {
	case unknown && fenceOK:
		return []any{next}
	case unknown:
		return []any{st}
	case !fenceOK:
		// The lease check fails. When the seq check fails as well, the
		// contract does not say which the store reports.
		if out.Result == LeaseLost || (want == Conflict && out.Result == Conflict) {
			return []any{st}
		}
	case out.Result == want:
		return []any{next}
	}
	return nil
}

// acquireStep is Acquire and Takeover. A lease is live for Acquire until
// the store's clock passes its expiry; the model knows the expiry only to
// within the interval of the call that set it, and the acquirer's stamp
// only to within its own call, so near expiry both answers are possible.
func acquireStep(st state, in Input, out Output) []any {
	unknown := out.Result == Unknown
	if !st.exists {
		return missing(st, out)
	}
	force := in.Kind == Takeover
	slack := int64(Slack)
	canOK := force || !st.lease.set || st.lease.expLo <= in.End+slack
	canHeld := !force && st.lease.set && st.lease.expHi+slack > in.Start
	granted := func(token int64) state {
		next := st
		next.lease = lease{set: true, token: token, expLo: in.Start + int64(in.TTL), expHi: in.End + int64(in.TTL)}
		next.maxTok = max(st.maxTok, token)
		return next
	}
	var states []any
	switch {
	case unknown:
		if canOK {
			states = append(states, granted(0))
		}
		if canHeld {
			states = append(states, st)
		}
	case out.Result == OK:
		if canOK && out.Token > st.maxTok {
			states = append(states, granted(out.Token))
		}
	case out.Result == Held:
		if canHeld {
			states = append(states, st)
		}
	}
	return states
}
