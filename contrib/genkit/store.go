package cairngenkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/firebase/genkit/go/core/x/session"
)

// DefaultKey is the session variable that holds a Genkit session's state
// when StoreOptions.Key is empty.
const DefaultKey = "genkit.state"

// snapshotEvery is how many events past the last snapshot make Get write
// a new one, so that opening a session that has been saved many times
// does not fold every save.
const snapshotEvery = 64

// StoreOptions configure NewStore.
type StoreOptions struct {
	// Key is the session variable that holds the state; empty means
	// DefaultKey. Two Stores with different keys keep two states in the
	// same cairn session.
	Key string
	// Labels are given to the sessions Save creates.
	Labels map[string]string
}

// Store is Genkit's session.Store[S] on a cairn store: each Save appends
// the whole state to the cairn session of the same ID, in one state.set
// event, and Get folds the session to its last saved state.
//
// A Store remembers, per session, the last seq it read (Get) or wrote
// (Save), and each Save appends only if the session is still there: a
// writer whose view is stale gets a *ConflictError (errors.Is
// cairn.ErrConflict) and writes nothing, never overwriting another's save.
// Its methods are safe for concurrent use; give each flow run that loads
// and updates a session its own View, so that two runs updating one
// session at once are checked against each other too.
type Store[S any] struct {
	cs   cairn.Store
	key  string
	opts StoreOptions

	mu      sync.Mutex
	seen    map[string]int64        // the last seq read or written, per session
	pending map[string]*cairn.Event // the last save, when its outcome is unknown
}

var _ session.Store[struct{}] = (*Store[struct{}])(nil)

// NewStore returns a Genkit session store that keeps its sessions in cs.
// Closing cs is the caller's business.
func NewStore[S any](cs cairn.Store, opts StoreOptions) *Store[S] {
	key := opts.Key
	if key == "" {
		key = DefaultKey
	}
	return &Store[S]{cs: cs, key: key, opts: opts, seen: map[string]int64{}, pending: map[string]*cairn.Event{}}
}

// View returns a Store on the same cairn store, with the same options,
// that remembers what it reads and writes on its own: a Save through the
// view is checked against what the view read, whatever other views do.
// A Store remembers one seq per session it touches; a View made for one
// flow run goes with it.
func (s *Store[S]) View() *Store[S] {
	return NewStore[S](s.cs, s.opts)
}

// Get returns the last state saved in session id, or nil and no error when
// the store holds no such session or the session holds no state under the
// store's key (Genkit's contract). It remembers the session's last seq for
// the next Save. It returns an error wrapping cairn.ErrInvalidID for an ID
// cairn refuses, cairn.ErrSealed for an encrypted session read without its
// key (open the store through store/crypt), and an error naming the
// session when the saved state does not decode into S.
func (s *Store[S]) Get(ctx context.Context, id string) (*session.Data[S], error) {
	if err := cairn.ValidateID(id); err != nil {
		return nil, fmt.Errorf("genkit session get: %w", err)
	}
	r, err := cairn.Restore(ctx, s.cs, id)
	if errors.Is(err, cairn.ErrNotFound) {
		s.remember(id, 0)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("genkit session get %s: %w", id, err)
	}
	if err := crypt.CheckUnsealed(id, r.Events); err != nil {
		return nil, fmt.Errorf("genkit session get %s: %w", id, err)
	}
	s.remember(id, r.State.LastSeq)
	s.snapshot(ctx, id, r)
	raw, ok := r.State.Variables[s.key]
	if !ok {
		return nil, nil
	}
	var st S
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("genkit session get %s: variable %q does not decode into %T: %w", id, s.key, st, err)
	}
	return &session.Data[S]{ID: id, State: st}, nil
}

// Save appends data's state to session id in one atomic append (a
// state.set event of the store's key), creating the session when this
// Store has not read it and the cairn store does not hold it. The append
// expects the session at the seq this Store last read or wrote: when
// another writer appended since, or when the Store has not read a session
// that holds events, nothing is written and Save returns a
// *ConflictError; Get the session again (session.Load) and apply the
// change to what it returns. It returns an error wrapping cairn.ErrNotFound
// when the session was deleted since it was read. A save whose outcome is
// unknown (an outage) returns its error and is sent again, the same,
// before this Store's next save of the session: the store takes an append
// it holds as done, so it is recorded once either way.
func (s *Store[S]) Save(ctx context.Context, id string, data *session.Data[S]) error {
	if err := cairn.ValidateID(id); err != nil {
		return fmt.Errorf("genkit session save: %w", err)
	}
	if data == nil {
		return fmt.Errorf("genkit session save %s: no data", id)
	}
	if data.ID != "" && data.ID != id {
		return fmt.Errorf("genkit session save %s: the data is of session %q", id, data.ID)
	}
	raw, err := json.Marshal(data.State)
	if err != nil {
		return fmt.Errorf("genkit session save %s: the state does not encode as JSON: %w", id, err)
	}
	s.mu.Lock()
	expect, pending := s.seen[id], s.pending[id]
	s.mu.Unlock()
	if pending != nil {
		// The last save's outcome is unknown: send it again, the same.
		// The store takes an append it holds as done; a conflict means
		// another writer got in, whether or not that save was recorded.
		if err := s.append(ctx, id, expect, *pending); err != nil {
			return err
		}
		expect++
	}
	if expect == 0 {
		err := s.cs.Create(ctx, cairn.SessionMeta{ID: id, Labels: s.opts.Labels})
		if err != nil && !errors.Is(err, cairn.ErrExists) {
			return fmt.Errorf("genkit session save %s: %w", id, err)
		}
	}
	ev, err := cairn.NewEvent(cairn.KindStateSet, "", cairn.StateSet{Set: map[string]json.RawMessage{s.key: raw}, Deleted: []string{}})
	if err != nil {
		return fmt.Errorf("genkit session save %s: %w", id, err)
	}
	return s.append(ctx, id, expect, ev)
}

// append appends ev to session id at seq expect, and remembers the
// outcome: the seq after it, or ev as pending when the outcome is unknown.
func (s *Store[S]) append(ctx context.Context, id string, expect int64, ev cairn.Event) error {
	ev.Seq = expect + 1
	err := s.cs.Append(ctx, id, expect, ev)
	switch {
	case errors.Is(err, cairn.ErrConflict):
		ce := &ConflictError{Session: id, Read: expect, Last: -1}
		if info, serr := s.cs.Stat(ctx, id); serr == nil {
			ce.Last = info.LastSeq
		}
		return ce
	case errors.Is(err, cairn.ErrNotFound) && expect > 0:
		return fmt.Errorf("genkit session save %s: the session was deleted after this store read it: %w", id, err)
	case err != nil && !errors.Is(err, cairn.ErrNotFound) && !errors.Is(err, cairn.ErrInvalidEvent) && !errors.Is(err, cairn.ErrTooLarge) && !errors.Is(err, cairn.ErrClosed):
		s.mu.Lock()
		if s.seen[id] == expect {
			s.seen[id], s.pending[id] = expect, &ev
		}
		s.mu.Unlock()
		return fmt.Errorf("genkit session save %s: %w (the next save sends it again)", id, err)
	case err != nil:
		return fmt.Errorf("genkit session save %s: %w", id, err)
	}
	s.mu.Lock()
	if s.seen[id] == expect {
		s.seen[id] = expect + 1
		delete(s.pending, id)
	}
	s.mu.Unlock()
	return nil
}

func (s *Store[S]) remember(id string, seq int64) {
	s.mu.Lock()
	s.seen[id] = seq
	delete(s.pending, id) // read: what the store holds is known
	s.mu.Unlock()
}

// snapshot gives the session a snapshot at its last event when Get folded
// many events past the last one. A snapshot is derived data: a failure
// leaves the session whole, so it is not reported.
func (s *Store[S]) snapshot(ctx context.Context, id string, r *cairn.Restored) {
	sn, ok := s.cs.(cairn.Snapshotter)
	if !ok || len(r.Events) < snapshotEvery {
		return
	}
	snap, err := r.State.Encode(r.Events[len(r.Events)-1])
	if err != nil {
		return
	}
	_ = sn.PutSnapshot(ctx, id, snap)
}

// ConflictError is a Save refused because the session is not where the
// Store last saw it: another writer appended first, or the Store never
// read a session that holds events. Nothing of the Save was written.
type ConflictError struct {
	Session string
	Read    int64 // the seq the Store expected (0: it had not read the session)
	Last    int64 // the session's last seq when the Save was refused; -1 if unknown
}

func (e *ConflictError) Error() string {
	last := "later"
	if e.Last >= 0 {
		last = fmt.Sprintf("at seq %d", e.Last)
	}
	if e.Read == 0 {
		return fmt.Sprintf("genkit session save %s: the session holds events (%s) this store has not read: load it (session.Load) and update it rather than creating it again", e.Session, last)
	}
	return fmt.Sprintf("genkit session save %s: another writer saved the session after this store read it (read at seq %d, now %s): load it again (session.Load) and apply the change to its state", e.Session, e.Read, last)
}

// Unwrap makes errors.Is(err, cairn.ErrConflict) hold.
func (e *ConflictError) Unwrap() error { return cairn.ErrConflict }
