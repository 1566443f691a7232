package cairn

import (
	"context"
	"time"
)

// Store is where sessions live. Every backend implements the same contract
// and passes the conformance suite in store/storetest.
//
// All methods are safe for concurrent use by many goroutines and, for the
// shared backends, by many processes. Every method returns ErrClosed after
// Close.
type Store interface {
	// Create makes a new, empty session (last seq 0). It returns
	// ErrInvalidID for an ID that breaks the rules and ErrExists when the
	// store already holds a live session with that ID. A zero CreatedAt is
	// set to the store's clock.
	Create(ctx context.Context, meta SessionMeta) error

	// Append adds events, with seqs expectSeq+1, expectSeq+2, …, to the end
	// of a session's history, all or nothing, in one round trip or
	// transaction where the backend allows, at a cost that does not grow with
	// the history. It returns:
	//   - nil when the session's last seq was expectSeq: the events are stored;
	//   - nil, writing nothing, when the session holds exactly these events at
	//     these seqs (version, seq, time, kind, run and data), whatever follows
	//     them: a retry after a lost reply is already done;
	//   - ErrConflict otherwise (someone else appended first): of writers
	//     racing at one expectSeq exactly one wins, and ErrConflict always
	//     means nothing of the call was written;
	//   - ErrNotFound for a missing, deleted or expired session (an append
	//     never brings a session back), ErrTooLarge past the store's limits,
	//     an error wrapping ErrInvalidEvent for invalid events or seqs.
	Append(ctx context.Context, id string, expectSeq int64, events ...Event) error

	// Load returns a session's info and its events with seq >= fromSeq,
	// in seq order (fromSeq 0 or 1: all). It returns ErrNotFound for a
	// missing, deleted or expired session.
	Load(ctx context.Context, id string, fromSeq int64) (*Record, error)

	// Stat returns a session's info without its events: what Load returns
	// as Record.Info, with Load's errors (ErrNotFound for a missing,
	// deleted or expired session, ErrDamaged for a damaged one).
	Stat(ctx context.Context, id string) (*SessionInfo, error)

	// List returns infos of live sessions, most recently updated first,
	// filtered and paged by opts.
	List(ctx context.Context, opts ListOptions) (*ListPage, error)

	// Delete erases a session and everything derived from it. It returns
	// ErrNotFound if there was nothing to delete. An Append that arrives
	// afterwards gets ErrNotFound.
	Delete(ctx context.Context, id string) error

	// Close releases the store's resources. It is safe to call twice.
	Close() error
}

// Snapshotter is an optional Store ability: keep a snapshot of a
// session's folded state, so that opening a long session folds only the
// events after it (see Restore). A snapshot is derived data: cairn writes
// it, checks it against the events when it reads it (the seq, a checksum
// of the state and one of the event at that seq), and never trusts a
// stale or damaged one over the events. A store keeps the bytes it is
// given and nothing else: it need not understand them. Stores without
// this ability open every session by replaying all of its events.
type Snapshotter interface {
	// PutSnapshot stores snap as the session's snapshot. A store keeps one
	// snapshot per session, the one with the highest Seq: a snapshot
	// older than the one it holds is dropped and PutSnapshot returns nil.
	// It returns ErrNotFound for a missing, deleted or expired session (a
	// snapshot never brings a session back) and ErrTooLarge past the
	// store's limits. It changes neither the session's updated time nor
	// its expiry. Delete, Sweep and expiry remove the snapshot with the
	// session.
	PutSnapshot(ctx context.Context, id string, snap Snapshot) error

	// LoadSnapshot returns the session's snapshot, or nil and no error
	// when the live session has none. It returns ErrNotFound for a
	// missing, deleted or expired session.
	LoadSnapshot(ctx context.Context, id string) (*Snapshot, error)

	// DropSnapshot removes the session's snapshot, if it has one; the
	// next open folds every event and the next snapshot rebuilds it. It
	// returns ErrNotFound for a missing, deleted or expired session.
	DropSnapshot(ctx context.Context, id string) error
}

// Snapshot is a session's folded state at a seq, as a Snapshotter stores
// it: Data is State.Encode's, opaque to the store.
type Snapshot struct {
	Seq  int64  // the seq of the last event folded into Data
	Data []byte // the encoded snapshot
}

// SessionMeta is what Create records about a new session.
type SessionMeta struct {
	ID        string            `json:"id"`
	CreatedAt time.Time         `json:"created_at"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Status is where a session stands, as List reports it.
type Status string

// Session statuses.
const (
	StatusNew         Status = "new"               // created, no run yet
	StatusRunning     Status = "running"           // a run started and has not ended
	StatusInterrupted Status = "interrupted"       // a run was interrupted and can be resumed
	StatusAwaiting    Status = "awaiting_approval" // a run waits for a person's decision
	StatusCompleted   Status = "completed"         // the last run completed
	StatusFailed      Status = "failed"            // the last run failed
	StatusMaxSteps    Status = "max_steps"         // the last run hit its step limit
	StatusDamaged     Status = "damaged"           // the stored data is damaged (ErrDamaged); read-only
)

// SessionInfo summarises a session for listing.
type SessionInfo struct {
	ID           string            `json:"id"`
	FirstMessage string            `json:"first_message"`
	CreatedAt    time.Time         `json:"created_at"`
	UpdatedAt    time.Time         `json:"updated_at"`
	Status       Status            `json:"status"`
	Steps        int               `json:"steps"`
	Labels       map[string]string `json:"labels"`
	LastSeq      int64             `json:"last_seq"`
}

// Record is a loaded session: its info and its events in seq order.
type Record struct {
	Info   SessionInfo
	Events []Event
}

// ListOptions filters and pages List. Zero values mean "no filter".
type ListOptions struct {
	Status        []Status          // any of these statuses
	Labels        map[string]string // all of these labels, with these values
	UpdatedAfter  time.Time         // updated strictly after
	UpdatedBefore time.Time         // updated strictly before
	Limit         int               // page size; 0 means DefaultListLimit
	Cursor        string            // from a previous page's Next

	// Prefix keeps the sessions whose ID starts with it (case-sensitive).
	// Stores serve it from a range of an index on the ID, so a prefix
	// that matches a few sessions costs what they cost, however many
	// sessions the namespace holds. The order stays List's.
	Prefix string
}

// ListPage is one page of List. Next is empty on the last page.
type ListPage struct {
	Sessions []SessionInfo
	Next     string
}

// StoreOptions are the options every backend takes.
type StoreOptions struct {
	// Namespace isolates sessions: a store sees only its namespace's.
	// Empty means DefaultNamespace. Same rules as a session ID.
	Namespace string
	// TTL expires sessions this long after their last update; 0: never.
	TTL time.Duration
	// Now is the store's clock, for updated times and expiry; nil means
	// time.Now. Tests inject a clock here.
	Now func() time.Time
	// Limits bound event size and events per append.
	Limits Limits
}

// ExpiresAt returns when a session updated at t expires, or the zero time
// when the store has no TTL.
func (o StoreOptions) ExpiresAt(t time.Time) time.Time {
	if o.TTL <= 0 {
		return time.Time{}
	}
	return t.Add(o.TTL)
}
