// Package linearize checks that cairn's stores are linearizable: that
// every history of concurrent calls on a store, faults included, is
// explained by some order of the calls in which each takes effect at one
// moment between its call and its return, as the sequential contract of
// cairn.Store and cairn.Leaser (store.go, lease.go) says.
//
// Clients (Client) run random operations on a few sessions of one store —
// Create, Append at the seq they last saw (with the retried-append rule:
// an append whose reply was lost is sent again), Load, Delete, and lease
// calls with fenced appends — and record each call's input, result and
// times (History, or Stream from a child process). Model is the
// sequential specification, for the checker Porcupine
// (github.com/anishathalye/porcupine). The tests of this package run it on
// every backend while faults are injected (internal/testing/fault): TCP cuts,
// stalls and delays between the clients and PostgreSQL, Redis and MongoDB,
// SIGKILL and SIGSTOP of the client processes of the file and sqlite
// stores.
//
// # The model
//
// A session is absent or present; when present it has a list of events
// (seen through their IDs and a digest of them) and a lease. Append
// succeeds at the session's last seq, and also when the session holds
// exactly the events given at the seqs given, whether or not others
// followed them (a retry: nothing is written); otherwise it is a conflict,
// and nothing of it was written. A fenced append, a renewal and a
// release need the lease to be the caller's (same token, not released);
// when both the lease and the seq are wrong, either error is accepted.
// Tokens grow: every token a caller sees is larger than every one seen
// before for that session, through deletions. Delete removes the events
// and the lease.
//
// # Time
//
// Only Acquire depends on time: it fails while another lease is live and
// succeeds once it expired. The stores stamp a lease's expiry with their
// client's wall clock (now + TTL) and compare an acquirer's stamp with it.
// Each stamp is taken somewhere between the call and the return (or the
// moment the caller gave up) of its operation, so the model keeps, for the
// lease, the interval in which its expiry lies, and lets an Acquire answer
// "held" when the lease may still have been live at its stamp and "ok"
// when it may have expired, both when both may be, with Slack (5 ms) for
// the stores that keep times to the microsecond or millisecond. A renewal
// moves the interval; a release clears it. Stamps and history times are
// wall-clock Unix nanoseconds, so histories from several processes of one
// machine line up.
//
// # Unknown outcomes
//
// A call that ends without an answer from the store (a broken connection,
// its deadline, a killed process) may or may not have been applied. It is
// given the return time +∞, so the checker may place it at any point after
// its call, or after every other call (which is the same as never). A Load
// without an answer is left out of the history.
package linearize
