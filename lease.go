package cairn

import (
	"context"
	"fmt"
	"time"
)

// Lease is one holder's claim on a session for a while: the worker (or
// process) that runs the session now. Token is the fencing token: it grows
// with every Acquire or Takeover of the session's lease and is never
// reused, so a write fenced by an older token is refused once someone else
// has taken the session over. Takeovers counts the leases of the session
// granted while an earlier holder had not released it (it had expired, or
// was taken by Takeover): the runs its workers left behind.
type Lease struct {
	Session   string    `json:"session"`
	Holder    string    `json:"holder"`
	Token     int64     `json:"token"`
	Expires   time.Time `json:"expires"`
	Takeovers int64     `json:"takeovers,omitempty"`
}

// Leaser is an optional Store ability: leases that let many workers share
// a store and run each session in one place at a time. A worker Acquires a
// session's lease, Renews it while it runs, writes with AppendFenced and
// Releases it; a dead holder's lease expires after its TTL, on the store's
// clock (StoreOptions.Now: keep machines within a small part of the TTL).
// Fencing is by token, checked in the append's atomic step: once another
// holder has the lease (after expiry, or by Takeover) the old lease's
// AppendFenced and Renew return ErrLeaseLost, whatever its holder's clock
// says. Plain Append is not fenced.
//
// Fallback: without Leaser a history still never forks (ErrConflict), but
// two processes may both start a run, the loser learning it at its first
// write; the agent and the CLI run without a claim, and cairn worker
// refuses such a store.
type Leaser interface {
	// Acquire takes the lease of session id for holder, for ttl. It
	// returns a *LeaseHeldError (which wraps ErrLeaseHeld and names the
	// holder and the expiry) while another lease, of any holder, is live,
	// and ErrNotFound for a missing, deleted or expired session. Of many
	// concurrent Acquires exactly one succeeds.
	Acquire(ctx context.Context, id, holder string, ttl time.Duration) (Lease, error)

	// Takeover is Acquire that does not wait for a live lease to expire:
	// it takes the lease with a new token whoever holds it, and the old
	// holder's writes are refused from then on.
	Takeover(ctx context.Context, id, holder string, ttl time.Duration) (Lease, error)

	// Renew extends a lease to ttl from now. It returns ErrLeaseLost when
	// the lease was released, or acquired by another since; a lease that
	// expired but that nobody took since is renewed.
	Renew(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error)

	// Release gives a lease up, so the session can be acquired at once.
	// It returns ErrLeaseLost when the lease was no longer held.
	Release(ctx context.Context, lease Lease) error

	// CurrentLease returns the live lease of session id, or a Lease with
	// an empty Holder (and the session's Takeovers) when there is none
	// (never taken, released or expired). It returns ErrNotFound for a
	// missing session.
	CurrentLease(ctx context.Context, id string) (Lease, error)

	// CurrentLeases returns the live leases of those of ids that have
	// one, keyed by session ID, in one round trip where the backend
	// allows (a page of List and its holders, as `cairn sessions list`
	// shows them). A session that is missing, damaged or has no live lease is
	// absent from the map; that is not an error.
	CurrentLeases(ctx context.Context, ids []string) (map[string]Lease, error)

	// AppendFenced is Append for a lease holder: the same contract, and
	// in the same atomic step the store checks that lease is still the
	// session's lease (same token, not released). Otherwise nothing is
	// written and it returns ErrLeaseLost.
	AppendFenced(ctx context.Context, id string, lease Lease, expectSeq int64, events ...Event) error
}

// LeaseHeldError says who holds a session's lease, and until when. A zero
// Expires means a claim without expiry: an operating-system lock held by a
// live process.
type LeaseHeldError struct {
	Session string
	Holder  string
	Expires time.Time
}

// Error names the session, the holder and the expiry.
func (e *LeaseHeldError) Error() string {
	if e.Expires.IsZero() {
		return fmt.Sprintf("session %s is being run elsewhere: %s holds it for as long as that process runs", e.Session, e.Holder)
	}
	return fmt.Sprintf("session %s is being run elsewhere: %s holds its lease until %s",
		e.Session, e.Holder, e.Expires.UTC().Format(time.RFC3339))
}

// Unwrap returns ErrLeaseHeld.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }
