package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
)

// appendTimeout bounds one write to the store. Writes do not use the run's
// context: a cancellation must never cut a step's append in half, and the
// run.interrupted of a cancelled run must still be written.
const appendTimeout = 5 * time.Second

// Session is one conversation run by an Agent: its memory (the events),
// its State folded from them, and the bookkeeping of writes to the store.
// Its methods are safe for concurrent use, but only one run (Run or
// ResumeRun) may be under way at a time; another returns ErrBusy.
type Session struct {
	agent *Agent
	store cairn.Store
	id    string

	running sync.Mutex // held by the run under way

	mu       sync.Mutex // guards what follows
	mem      *cairn.Memory
	state    *cairn.State
	savedSeq int64         // the last seq the store holds
	unsaved  []cairn.Event // events in memory the store does not hold yet, in order
	degraded bool          // the store failed and has not answered since
	warnings []error
	claim    *Claim // the lease the session's writes are fenced with, if any
}

// ErrBusy is returned by Run and ResumeRun while another run of the same
// Session is under way.
var ErrBusy = errors.New("session is busy with another run")

func newSession(a *Agent, st cairn.Store, id string, mem *cairn.Memory, state *cairn.State) *Session {
	return &Session{agent: a, store: st, id: id, mem: mem, state: state, savedSeq: mem.LastSeq()}
}

// ID returns the session's ID.
func (s *Session) ID() string { return s.id }

// Memory returns the session's memory: every event, saved or not yet
// saved. Read it between runs; it is not safe to read while a run appends.
func (s *Session) Memory() *cairn.Memory {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mem
}

// State returns a copy of the session's state, folded incrementally from
// its events as they are appended.
func (s *Session) State() *cairn.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Clone()
}

// Warnings returns what went wrong without stopping a run: a
// *ResumeWarning when a different agent ran the session before, a
// *StoreWarning when the store failed and the run went on in memory.
func (s *Session) Warnings() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.warnings)
}

// Unsaved returns how many events the store does not hold yet (OnError
// "degrade" after a store failure). Flush writes them.
func (s *Session) Unsaved() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.unsaved)
}

// StoreWarning says that the store failed and the run went on in memory.
type StoreWarning struct {
	Session string
	Err     error
}

// Error says that the store failed and why.
func (w *StoreWarning) Error() string {
	return fmt.Sprintf("session %s: the store failed, the run goes on in memory and saves when the store answers again: %v", w.Session, w.Err)
}

// Unwrap returns the store's error.
func (w *StoreWarning) Unwrap() error { return w.Err }

// Flush writes the events the store does not hold yet, in one append. It
// returns nil when there is nothing left to write.
func (s *Session) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unsaved) == 0 {
		return nil
	}
	rest, err := s.write(ctx, s.unsaved)
	if err != nil {
		s.unsaved = rest
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// Approve records a person's decision on a tool call that awaits approval
// (approval.decided). Resume the run with ResumeRun: approved calls run,
// denied ones get an error result "denied by a person: <note>".
func (s *Session) Approve(ctx context.Context, callID string, approved bool, note string) error {
	s.mu.Lock()
	pending := slices.ContainsFunc(s.state.Pending, func(p cairn.PendingCall) bool { return p.ID == callID })
	s.mu.Unlock()
	if !pending {
		return fmt.Errorf("approve %s in session %s: no pending tool call has that ID", callID, s.id)
	}
	e := cairn.MustEvent(cairn.KindApprovalDecided, s.runID(), cairn.ApprovalDecided{CallID: callID, Approved: approved, Note: note})
	if err := s.append(ctx, e); err != nil {
		return fmt.Errorf("approve %s: %w", callID, err)
	}
	return nil
}

func (s *Session) runID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Run
}

func (s *Session) warn(w error) {
	s.mu.Lock()
	s.warnings = append(s.warnings, w)
	s.mu.Unlock()
	s.agent.logger().Warn(w.Error(), "session", s.id)
}

// append numbers events, writes them (after any unsaved ones) in one
// atomic store append, and folds them into the state. With OnError
// "degrade" a failing store keeps them in memory as unsaved; with "fail",
// or for a conflict or an invalid or oversize event, nothing is added and
// the error is returned.
func (s *Session) append(ctx context.Context, events ...cairn.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.mem.LastSeq()
	for i := range events {
		events[i].Seq = last + int64(i) + 1
		if events[i].V == 0 {
			events[i].V = cairn.FormatVersion
		}
		if err := cairn.ValidateEvent(events[i], events[i].Seq); err != nil {
			return fmt.Errorf("append to session %s: %w", s.id, err)
		}
	}
	batch := append(slices.Clone(s.unsaved), events...)
	rest, err := s.write(ctx, batch)
	switch {
	case err == nil:
	case fatalStoreError(err) || s.agent.failMode():
		return err
	default:
		if !s.degraded {
			s.degraded = true
			w := &StoreWarning{Session: s.id, Err: err}
			s.warnings = append(s.warnings, w)
			s.agent.logger().Warn(w.Error(), "session", s.id, "unsaved", len(rest))
		}
		s.unsaved = rest
	}
	if _, err := s.mem.Add(events...); err != nil {
		return fmt.Errorf("append to session %s: %w", s.id, err)
	}
	for _, e := range events {
		if err := s.state.Apply(e); err != nil {
			return fmt.Errorf("append to session %s: %w", s.id, err)
		}
	}
	return nil
}

// write appends batch after savedSeq with a context the run's cancellation
// cannot kill, and returns what is still unsaved of it. When an earlier
// write's outcome was unknown (it timed out but committed), a conflict
// whose stored events are exactly batch's first ones counts them as
// written. With s.mu held.
func (s *Session) write(ctx context.Context, batch []cairn.Event) ([]cairn.Event, error) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
	defer cancel()
	err := s.storeAppend(wctx, s.savedSeq, batch...)
	if errors.Is(err, cairn.ErrConflict) && len(s.unsaved) > 0 {
		n, ok, lerr := s.reconcile(wctx, batch)
		switch {
		case lerr != nil:
			// The store answered the append but not the check: whether
			// the conflict is our own earlier write is unknown, so keep
			// the events unsaved and look again at the next write.
			err = fmt.Errorf("check what the store holds after a conflict: %w", lerr)
		case ok:
			s.savedSeq = batch[n-1].Seq
			batch = batch[n:]
			err = nil
			if len(batch) > 0 {
				err = s.storeAppend(wctx, s.savedSeq, batch...)
			}
		}
	}
	switch {
	case err == nil:
		if len(batch) > 0 {
			s.savedSeq = batch[len(batch)-1].Seq
		}
		s.unsaved = nil
		if s.degraded {
			s.degraded = false
			s.agent.logger().Info("the store answers again; unsaved events written", "session", s.id)
		}
		return nil, nil
	case errors.Is(err, cairn.ErrConflict):
		return batch, fmt.Errorf("session %s was changed by another process: %w", s.id, err)
	default:
		return batch, fmt.Errorf("append to session %s: %w", s.id, err)
	}
}

// reconcile reports how many of batch's first events the store already
// holds, byte for byte, and whether it holds nothing else after them. An
// error means the store could not be read: nothing is known.
func (s *Session) reconcile(ctx context.Context, batch []cairn.Event) (int, bool, error) {
	rec, err := s.store.Load(ctx, s.id, s.savedSeq+1)
	if err != nil {
		if fatalStoreError(err) {
			return 0, false, nil
		}
		return 0, false, err
	}
	if len(rec.Events) == 0 || len(rec.Events) > len(batch) {
		return 0, false, nil
	}
	for i, got := range rec.Events {
		want := batch[i]
		if got.Seq != want.Seq || got.Kind != want.Kind || got.Run != want.Run || !jsonEqual(got.Data, want.Data) {
			return 0, false, nil
		}
	}
	return len(rec.Events), true, nil
}

func jsonEqual(a, b json.RawMessage) bool {
	ca, err1 := cairn.Canonical(a)
	cb, err2 := cairn.Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// fatalStoreError reports whether err stops a run whatever OnError says:
// another writer, a deleted session, or events the store refuses.
func fatalStoreError(err error) bool {
	return errors.Is(err, cairn.ErrConflict) || errors.Is(err, cairn.ErrInvalidEvent) || errors.Is(err, cairn.ErrLeaseLost) ||
		errors.Is(err, cairn.ErrTooLarge) || errors.Is(err, cairn.ErrNotFound) || errors.Is(err, cairn.ErrInvalidID)
}
