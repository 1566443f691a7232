package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/eventcmp"
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
	storeErr error         // the store's last error while degraded
	// uncertain holds durable writes that failed with an outage: each
	// may have been applied all the same (the reply was lost), at the seqs
	// it was numbered with. A later write adopts the one the store holds.
	uncertain [][]cairn.Event
	warnings  []error
	claim     *Claim // the lease the session's writes are fenced with, if any
	snap      snapshotState
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
	defer s.waitSnapshot()
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.unsaved) > 0 {
		err := s.write(ctx, nil)
		if errors.Is(err, errAdopted) {
			continue
		}
		if err != nil {
			if cairn.IsUnavailable(err) {
				s.storeErr = err
			}
			return fmt.Errorf("flush: %w", err)
		}
	}
	return nil
}

// StoreError returns why the events Unsaved counts are not in the store:
// the store's last error while it was unavailable, or nil.
func (s *Session) StoreError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unsaved) == 0 {
		return nil
	}
	return s.storeErr
}

// Approve records a person's decision on a tool call that awaits approval
// (approval.decided). Resume the run with ResumeRun: approved calls run,
// denied ones get an error result "denied by a person: <note>".
func (s *Session) Approve(ctx context.Context, callID string, approved bool, note string) error {
	defer s.waitSnapshot()
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
// "degrade" an outage of the store (cairn.IsUnavailable) keeps them in
// memory as unsaved; with "fail", and for every other error (a conflict,
// an invalid or oversize event, a damaged or full store), nothing is added
// and the error is returned.
func (s *Session) append(ctx context.Context, events ...cairn.Event) error {
	return s.appendEvents(ctx, false, events)
}

// appendDurable is append for a step that must be in the store before the
// run goes on: the tool.started of a tool that is not idempotent. An
// outage does not degrade it: nothing is added to the memory and the
// error is a *NotRecordedError. Since the store may have applied the write
// before the connection broke, its events are kept aside as uncertain and
// adopted if a later write finds them stored.
func (s *Session) appendDurable(ctx context.Context, events ...cairn.Event) error {
	return s.appendEvents(ctx, true, events)
}

func (s *Session) appendEvents(ctx context.Context, durable bool, events []cairn.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		// Numbered and checked once, here: the store, the memory and the
		// state take the data decoded by this check.
		batch, err := s.mem.Prepare(events...)
		if err != nil {
			return fmt.Errorf("append to session %s: %w", s.id, err)
		}
		err = s.write(ctx, batch)
		switch {
		case errors.Is(err, errAdopted):
			continue // the memory took in stored events: number again
		case err == nil:
		case s.agent.failMode() || !cairn.IsUnavailable(err):
			return err
		case durable:
			s.outage(err)
			s.uncertain = append(s.uncertain, batch)
			return &NotRecordedError{Session: s.id, Err: err}
		default:
			s.outage(err)
			s.unsaved = append(s.unsaved, batch...)
		}
		if _, err := s.mem.Add(batch...); err != nil {
			return fmt.Errorf("append to session %s: %w", s.id, err)
		}
		for _, e := range batch {
			if err := s.state.Apply(e); err != nil {
				return fmt.Errorf("append to session %s: %w", s.id, err)
			}
		}
		if err == nil {
			s.noteAppended(batch)
		}
		return nil
	}
}

// outage records that the store is unavailable, warning once per outage.
// With s.mu held.
func (s *Session) outage(err error) {
	s.storeErr = err
	if s.degraded {
		return
	}
	s.degraded = true
	w := &StoreWarning{Session: s.id, Err: err}
	s.warnings = append(s.warnings, w)
	s.agent.logger().Warn(w.Error(), "session", s.id, "unsaved", len(s.unsaved))
}

// NotRecordedError says that a step that must be stored before the run
// goes on could not be: the store is unavailable. The step did not
// happen (the tool did not run); it is still pending.
type NotRecordedError struct {
	Session string
	Err     error // the store's error; cairn.IsUnavailable reports true
}

// Error says that the store could not record the step, and why.
func (e *NotRecordedError) Error() string {
	return fmt.Sprintf("session %s: the store could not record the start of a tool call, so the call was not run: %v", e.Session, e.Err)
}

// Unwrap returns the store's error.
func (e *NotRecordedError) Unwrap() error { return e.Err }

// errAdopted tells appendEvents that write took stored events into the
// memory and renumbered the unsaved ones: the new events need new seqs.
var errAdopted = errors.New("stored events adopted")

// write appends the unsaved events and then events after savedSeq, in one
// append, with a context the run's cancellation cannot kill. On success
// the store holds them all. On failure events are not written and
// s.unsaved holds what the store still lacks of the earlier unsaved events.
// When an earlier write's outcome was unknown (it timed out but
// committed), a conflict whose stored events are exactly the batch's
// first ones counts them as written; stored events that are exactly an
// uncertain durable write are adopted (errAdopted). With s.mu held.
func (s *Session) write(ctx context.Context, events []cairn.Event) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
	defer cancel()
	batch := append(slices.Clone(s.unsaved), events...)
	err := s.storeAppend(wctx, s.savedSeq, batch...)
	if errors.Is(err, cairn.ErrConflict) && (len(s.unsaved) > 0 || len(s.uncertain) > 0) {
		n, adopted, lerr := s.reconcile(wctx, batch)
		switch {
		case lerr != nil:
			// The store answered the append but not the check: whether
			// the conflict is our own earlier write is unknown, so keep
			// the events unsaved and look again at the next write.
			err = fmt.Errorf("check what the store holds after a conflict: %w", lerr)
		case adopted:
			return errAdopted
		case n > 0:
			s.savedSeq = batch[n-1].Seq
			batch = batch[n:]
			s.unsaved = s.unsaved[min(n, len(s.unsaved)):]
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
		s.unsaved, s.uncertain, s.storeErr = nil, nil, nil
		if s.degraded {
			s.degraded = false
			s.agent.logger().Info("the store answers again; unsaved events written", "session", s.id)
		}
		return nil
	case errors.Is(err, cairn.ErrConflict):
		return fmt.Errorf("session %s was changed by another process: %w", s.id, err)
	default:
		return fmt.Errorf("append to session %s: %w", s.id, err)
	}
}

// reconcile looks at what the store holds after savedSeq. It returns how
// many of batch's first events the store holds, byte for byte, with
// nothing else after them; or, when the store holds the unsaved events
// that preceded an uncertain durable write and then exactly that write,
// adopts them: the memory takes the stored events in and the unsaved
// events after them move up (adopted true). An error means the store
// could not be read: nothing is known. With s.mu held.
func (s *Session) reconcile(ctx context.Context, batch []cairn.Event) (int, bool, error) {
	rec, err := s.store.Load(ctx, s.id, s.savedSeq+1)
	if err != nil {
		if cairn.IsUnavailable(err) {
			return 0, false, err
		}
		return 0, false, nil
	}
	stored := rec.Events
	if len(stored) == 0 {
		return 0, false, nil
	}
	if len(stored) <= len(batch) && eventcmp.Same(stored, batch[:len(stored)]) {
		return len(stored), false, nil
	}
	for _, u := range s.uncertain {
		before := int(u[0].Seq - s.savedSeq - 1) // stored events that must be unsaved ones
		if before < 0 || before > len(s.unsaved) || len(stored) != before+len(u) {
			continue
		}
		if eventcmp.Same(stored[:before], s.unsaved[:before]) && eventcmp.Same(stored[before:], u) {
			return 0, true, s.adopt(u)
		}
	}
	return 0, false, nil
}

// adopt puts the events u, found in the store, into the memory after the
// events before them, then a NotRun result for each call u started (this
// process did not run it: it heard that the start failed), and moves the
// memory's later (unsaved) events up past them; the calls leave the
// pending lists of later run.interrupted events, since they have their
// results. With s.mu held.
func (s *Session) adopt(u []cairn.Event) error {
	all := s.mem.Events()
	cut := int(u[0].Seq - 1 - s.mem.Base())
	notRun, err := notRunResults(u)
	if err != nil {
		return fmt.Errorf("take in the stored start of a tool call: %w", err)
	}
	later := slices.Clone(all[cut:])
	for i := range later {
		later[i].Seq += int64(len(u) + len(notRun))
		if later[i], err = dropPending(later[i], notRun); err != nil {
			return fmt.Errorf("take in the stored start of a tool call: %w", err)
		}
	}
	for i := range notRun {
		notRun[i].Seq = u[len(u)-1].Seq + int64(i) + 1
	}
	mem, err := s.mem.Rebuilt(slices.Concat(all[:cut], u, notRun, later)...)
	if err != nil {
		return fmt.Errorf("take in the stored start of a tool call: %w", err)
	}
	state, err := mem.State()
	if err != nil {
		return fmt.Errorf("take in the stored start of a tool call: %w", err)
	}
	s.mem, s.state = mem, state
	s.savedSeq = u[len(u)-1].Seq
	s.unsaved, s.uncertain = append(notRun, later...), nil
	return nil
}

// notRunResults returns a NotRun tool.result for each tool.started of u.
func notRunResults(u []cairn.Event) ([]cairn.Event, error) {
	var out []cairn.Event
	for _, e := range u {
		if e.Kind != cairn.KindToolStarted {
			continue
		}
		v, err := e.Decode()
		if err != nil {
			return nil, err
		}
		ts := v.(*cairn.ToolStarted)
		out = append(out, cairn.MustEvent(cairn.KindToolResult, e.Run, cairn.ToolResult{CallID: ts.CallID, Name: ts.Name, Output: NotRun, IsError: true}))
	}
	return out, nil
}

// dropPending returns e without the calls that results answer in its
// pending list, if e is a run.interrupted.
func dropPending(e cairn.Event, results []cairn.Event) (cairn.Event, error) {
	if e.Kind != cairn.KindRunInterrupted || len(results) == 0 {
		return e, nil
	}
	v, err := e.Decode()
	if err != nil {
		return e, err
	}
	ri := v.(*cairn.RunInterrupted)
	answered := map[string]bool{}
	for _, r := range results {
		w, err := r.Decode()
		if err != nil {
			return e, err
		}
		answered[w.(*cairn.ToolResult).CallID] = true
	}
	n := len(ri.Pending)
	ri.Pending = slices.DeleteFunc(ri.Pending, func(c cairn.ToolCall) bool { return answered[c.ID] })
	if len(ri.Pending) == n {
		return e, nil
	}
	data, err := json.Marshal(ri)
	if err != nil {
		return e, err
	}
	e.Data = data
	return e, nil
}
