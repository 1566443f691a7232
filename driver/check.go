package driver

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm"
)

// Guard makes the checks every store method opens with: that the store
// is not closed, then the arguments. The zero Guard is open. It is safe
// for concurrent use.
type Guard struct {
	closed atomic.Bool
}

// Close marks the store closed and reports whether this call did: false
// when it was closed already.
func (g *Guard) Close() bool { return g.closed.CompareAndSwap(false, true) }

// Closed reports whether Close was called.
func (g *Guard) Closed() bool { return g.closed.Load() }

// Check returns cairn.ErrClosed once the store is closed.
func (g *Guard) Check() error {
	if g.closed.Load() {
		return cairn.ErrClosed
	}
	return nil
}

// Session checks a call on the session id: an open store and a valid ID.
func (g *Guard) Session(id string) error {
	if err := g.Check(); err != nil {
		return err
	}
	return cairn.ValidateID(id)
}

// Append checks an Append call: an open store, then CheckAppend, whose
// events it returns.
func (g *Guard) Append(l cairn.Limits, id string, expectSeq int64, events []cairn.Event) ([]cairn.Event, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	return CheckAppend(l, id, expectSeq, events)
}

// Lease checks an Acquire or Takeover call: an open store, then
// CheckLease.
func (g *Guard) Lease(id, holder string, ttl time.Duration) error {
	if err := g.Check(); err != nil {
		return err
	}
	return CheckLease(id, holder, ttl)
}

// Search checks a Searcher's Search call: an open store. It returns the
// query's phrases (longterm.Phrases); none when the query has no token or
// limit is not positive, and then the search finds nothing.
func (g *Guard) Search(query string, limit int) ([][]string, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	return longterm.Phrases(query), nil
}

// CheckAppend validates an Append call before a store writes anything: the
// session ID, the number of events, each event's size and each event's
// validity with seqs following expectSeq. Every backend calls it first, so
// all of them refuse the same inputs with the same errors. It returns the
// events with their data decoded (cairn.ValidateEvents), for the store's
// summary (Summarize): the caller's slice when every event was checked
// already, as the agent's are, else a copy, so that the caller's slice is
// never written.
func CheckAppend(l cairn.Limits, id string, expectSeq int64, events []cairn.Event) ([]cairn.Event, error) {
	l = l.WithDefaults()
	if err := cairn.ValidateID(id); err != nil {
		return nil, err
	}
	if expectSeq < 0 {
		return nil, fmt.Errorf("%w: expected seq %d is negative", cairn.ErrInvalidEvent, expectSeq)
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("%w: append of no events", cairn.ErrInvalidEvent)
	}
	if len(events) > l.MaxAppendEvents {
		return nil, fmt.Errorf("%w: %d events in one append, the limit is %d", cairn.ErrTooLarge, len(events), l.MaxAppendEvents)
	}
	for _, e := range events {
		if n := e.Size(); n > l.MaxEventBytes {
			return nil, fmt.Errorf("%w: event seq %d (%s) is %d bytes, the limit is %d", cairn.ErrTooLarge, e.Seq, e.Kind, n, l.MaxEventBytes)
		}
	}
	return cairn.ValidateEvents(events, expectSeq+1)
}

// CheckLease validates the arguments of Acquire and Takeover: a valid ID, a
// non-empty holder and a positive TTL.
func CheckLease(id, holder string, ttl time.Duration) error {
	if err := cairn.ValidateID(id); err != nil {
		return err
	}
	if holder == "" {
		return fmt.Errorf("lease %s: the holder is empty", id)
	}
	if len(holder) > 256 {
		return fmt.Errorf("lease %s: the holder name is %d bytes, the limit is 256", id, len(holder))
	}
	if ttl <= 0 {
		return fmt.Errorf("lease %s: the TTL is %s, want more than 0", id, ttl)
	}
	return nil
}

// Options fills in the defaults of o (the namespace, the clock, the
// limits) and validates the namespace: what a store's Open does first.
func Options(o cairn.StoreOptions) (cairn.StoreOptions, error) {
	if o.Namespace == "" {
		o.Namespace = cairn.DefaultNamespace
	}
	if err := ValidateNamespace(o.Namespace); err != nil {
		return o, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TTL < 0 {
		o.TTL = 0
	}
	o.Limits = o.Limits.WithDefaults()
	return o, nil
}

// Expired reports whether a session that expires at exp has expired at now.
// A zero exp never expires.
func Expired(exp, now time.Time) bool {
	return !exp.IsZero() && !now.Before(exp)
}

// DamagedError says which session is damaged and how. It wraps cairn.ErrDamaged.
type DamagedError struct {
	Session string // the damaged session
	Where   string // the file, table or key at fault, "" when not known
	Msg     string // what is wrong, in words
}

// Error names the session, where the damage is and what it is.
func (e *DamagedError) Error() string {
	s := "session " + e.Session + " is damaged"
	if e.Where != "" {
		s += " (" + e.Where + ")"
	}
	return s + ": " + e.Msg
}

// Unwrap returns cairn.ErrDamaged.
func (e *DamagedError) Unwrap() error { return cairn.ErrDamaged }
