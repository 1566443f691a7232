package driver

import (
	"context"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/wire"
)

// Searcher is an optional cairn.Store ability: a text index of the sessions'
// events, kept by Append in the same write and erased with the session by
// Delete, Sweep and expiry. sessions.Search and `cairn sessions search`
// use it.
type Searcher interface {
	// Search returns the live sessions of the store's namespace whose
	// events' SearchText match query, best first, one hit per session
	// (its best event), at most limit. Each word of the query (a run of
	// characters between white space) is a phrase of its tokens, as
	// longterm.Phrases reads it; an event matches when it holds any of
	// them, and scores by BM25 over the index, as SQLite's FTS5 bm25()
	// does. A query without a token matches nothing.
	Search(ctx context.Context, query string, limit int) ([]SearchHit, error)
}

// SearchHit is one session that a Searcher found.
type SearchHit struct {
	ID    string  // the session
	Seq   int64   // its best-matching event
	Score float64 // BM25, higher is better; comparable within one search
}

// Sweeper is an optional cairn.Store ability: purge expired sessions now rather
// than waiting for the backend's own expiry. Stores without it purge
// expired sessions lazily; either way they are invisible once expired.
type Sweeper interface {
	// Sweep deletes every expired session of the namespace and returns
	// how many it deleted. It deletes them a few at a time, so that the
	// namespace's other writers do not wait for the whole sweep, and its
	// cost follows what it deletes, not the number of sessions.
	Sweep(ctx context.Context) (int, error)

	// CountExpired returns how many sessions Sweep would delete now,
	// deleting nothing (`cairn sessions gc --dry-run`).
	CountExpired(ctx context.Context) (int, error)
}

// Claimer is an optional ability of a cairn.Store that has leases: find the
// oldest session that matches a filter and has no live lease, and acquire
// its lease, in one atomic step (PostgreSQL: SELECT … FOR UPDATE SKIP
// LOCKED). Workers use it to take queued work. Without it, a worker lists
// the matching sessions, oldest first, and tries Acquire on each: also
// safe, since Acquire is atomic, only slower when many workers compete.
type Claimer interface {
	// ClaimNext acquires the lease of the least recently created live
	// session that matches filter (its Status and Labels; paging fields
	// are ignored) and has no live lease. It returns cairn.ErrNotFound when no
	// session is left to claim.
	ClaimNext(ctx context.Context, holder string, ttl time.Duration, filter cairn.ListOptions) (cairn.Lease, error)
}

// Checker is an optional cairn.Store ability: look through the stored data for
// damage, as far as the backend can tell cheaply, without changing
// anything. The file store reads every session's log against its info and
// its checksums; SQLite runs PRAGMA quick_check and reads every event
// against its checksum. `cairn doctor` runs it.
//
// Fallback: a store without Checker is checked only by its ordinary calls,
// which return an error wrapping cairn.ErrDamaged when they meet damage (see
// cairn.ErrDamaged); servers such as PostgreSQL have checks of their own.
type Checker interface {
	// Check reads the namespace's data and reports what is damaged or
	// left over. It writes nothing and repairs nothing, and may take as
	// long as reading everything once. Damage is a finding, not an
	// error: the error is for a check that could not run (the store is
	// unreachable, ctx ended).
	Check(ctx context.Context) (*CheckReport, error)
}

// CheckReport is what Checker.Check found.
type CheckReport struct {
	Sessions int       `json:"sessions"` // sessions checked
	Problems []Problem `json:"problems"` // what is wrong, the damaged sessions first, by ID
}

// Damaged returns the problems that are damaged sessions.
func (r *CheckReport) Damaged() []Problem {
	var out []Problem
	for _, p := range r.Problems {
		if p.Session != "" {
			out = append(out, p)
		}
	}
	return out
}

// Problem is one thing Check found wrong.
type Problem struct {
	// Session is the damaged session, or "" for a problem that is not
	// one session's: a damaged database file, a leftover file.
	Session string `json:"session,omitempty"`
	// Where is the file, table or key at fault.
	Where string `json:"where"`
	// Msg says what is wrong, in words.
	Msg string `json:"msg"`
	// Fix says what to do about it, in words; "" when there is nothing
	// better to say than to restore from a backup.
	Fix string `json:"fix,omitempty"`
	// Damage is true for damaged data (for a session, what its calls
	// return as cairn.ErrDamaged) and false for a leftover that loses nothing,
	// such as a lock file of a deleted session.
	Damage bool `json:"damage"`
}

// LocalLocker is an optional ability of a cairn.Store kept on this machine's
// disk (the file and SQLite stores): its sessions can be locked by the
// operating system. Every process that runs a session of the store locks
// the file LockFile names, and the kernel releases the lock when the
// process dies, however it dies, so the session is free again at once
// after a crash (agent.ClaimOptions.LockFile takes it). Without it — a
// store on a server, or in one process's memory — a claim relies on
// leases alone.
type LocalLocker interface {
	// LockFile returns the lock file of session id: beside the store,
	// under "<store's real path>.locks/<namespace>/", named "<id>.lock".
	// The store's real path is absolute with every symbolic link
	// resolved, so every name of one store (a link to it, a relative
	// path) gives the same file, and another store or namespace another.
	// It only names the file; nothing is created. It returns "" when
	// there is no lock file: an id that breaks the ID rules, or a
	// wrapper over a store that has none. Safe for concurrent use.
	LockFile(id string) string
}

// ValidateNamespace applies the session ID rules (cairn.ValidateID) to a
// namespace name. The error wraps cairn.ErrInvalidID.
func ValidateNamespace(ns string) error {
	if why := wire.NameProblem(ns, cairn.MaxIDLen); why != "" {
		return &nameError{why}
	}
	return nil
}

// nameError is a namespace that breaks the ID rules.
type nameError struct{ why string }

func (e *nameError) Error() string { return "invalid namespace: " + e.why }

func (e *nameError) Unwrap() error { return cairn.ErrInvalidID }
