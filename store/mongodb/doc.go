// Package mongodb is the cairn store on MongoDB, for long-term history and
// queries: one document per event, so no document nears MongoDB's 16 MiB
// limit however long a session grows. It needs no multi-document
// transaction and no TTL index, so it also runs on FerretDB (a MongoDB
// wire-protocol server), which has neither.
//
// # Quick start
//
//	s, err := mongodb.Open(ctx, "mongodb://127.0.0.1:27017/cairn?w=majority", cairn.StoreOptions{
//		Namespace: "agent_sessions",
//		TTL:       30 * 24 * time.Hour,
//	})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//
// The database is the URI's path ("cairn" when it has none). The package
// registers the URL schemes "mongodb" and "mongodb+srv" with cairn.Register,
// so importing it for its side effect makes cairn.Open accept them. New
// builds a store on a *mongo.Database whose client the caller keeps.
//
// # Layout
//
// A namespace NS is two collections:
//
//   - NS.sessions: one document per session, _id the session ID, holding
//     last_seq, the SessionInfo fields (status, steps, first_message, labels
//     as JSON pairs ["key","value"]), created/updated/expiry times as Unix
//     nanoseconds (created_ns, updated_ns, expires_ns) beside BSON dates for
//     people (created_at, updated_at, expires_at), fence, and once leased
//     lease_token and lease_expires_ns. An index on (updated_ns desc, _id
//     desc) serves List, whose filters and cursor are all part of the
//     query; one on (status, created_ns, _id) serves ClaimNext.
//   - NS.events: one document per event, {session, seq, token, written_at,
//     event}, event being the event's JSON envelope as bytes (so a reload
//     gives back the same bytes). A unique index on (session, seq) lets only
//     one writer hold each position of a history.
//
// # Atomic appends without transactions
//
// Append takes two round trips:
//
//  1. InsertMany (ordered) the event documents, tagged with a random token
//     of this call and written_at on the writer's real clock. A duplicate
//     key on (session, seq) means another writer holds the position.
//  2. Compare-and-set the session document: UpdateOne({_id, last_seq:
//     expectSeq, not expired, fence < start of this call}, {$set last_seq and
//     the info fields, $inc steps}). This is the commit point. If it matches
//     nothing, the call deletes its own event documents (by token) and
//     returns ErrNotFound (the session is missing, expired or being deleted)
//     or ErrConflict.
//
// Readers return only events with seq <= the session document's last_seq,
// so documents of an append that has not committed, or never will, are
// never seen; two writers at the same expectSeq cannot both insert
// expectSeq+1, so exactly one of them can commit. An append's cost does not
// depend on the length of the history: one indexed insert per event and one
// update by _id.
//
// The first user message is set only on a session that has none: when a
// batch holds a user message, the update first runs with first_message ""
// in its filter and, if that matches nothing, again without it (one more
// round trip, on later turns of a conversation only).
//
// # Recovery from a writer that died mid-append
//
// A writer killed between steps 1 and 2 leaves event documents above the
// session's last_seq, which would block that position forever. So when an
// insert meets a duplicate while the session's last_seq still equals
// expectSeq, the holder is uncommitted: a live writer between its two steps,
// or a dead one. If every document above last_seq was written more than
// StaleAfter (30 s, on the real clock) ago, the appender raises the session's
// fence to its own real-clock now, so that no append that began before can
// still commit (a writer merely paused for 30 s fails its commit instead of
// committing events that are gone), deletes those documents, and retries
// once. Otherwise it returns ErrConflict, as for any lost race. This relies
// on the writers' clocks agreeing to well within StaleAfter.
//
// A Store also remembers the tokens of its own failed appends: after a
// broken connection their documents may outlive their removal. Its next
// append treats them as stale at once (fence first). And when a commit
// fails with an error, so that it may have been applied, the fence is
// raised (while the session is still at expectSeq) before the call's
// documents are removed; if the session has moved on they stay. These
// cleanups have ten seconds of their own: a call whose context ends first
// returns then, and its cleanup goes on without it.
//
// # Outages
//
// An error that means the server could not be reached or could not serve
// (a network error, a timeout, no server selected, a server shutting down
// or stepping down) wraps cairn.ErrUnavailable; the server's other answers
// do not.
//
// # Create, Delete and the states between
//
// Create inserts the session document with last_seq -1 ("creating"),
// deletes any event documents left under that ID by an earlier session of
// the same ID (expired, swept or crashed), then sets last_seq 0: four round
// trips with the purge of an expired document of the ID. Delete (and Sweep)
// first set last_seq -2 ("erasing"), so late writers fail their commit and
// readers see nothing, then delete the events, then the document. A new
// Create of the ID meanwhile gets ErrExists rather than racing the erasure.
// A document left in either state by a process that died is taken over by
// Create, or finished by Sweep, once it is older than StaleAfter.
//
// # Expiry: MongoDB and FerretDB
//
// Expiry is always a read filter: a session whose expires_ns has passed on
// the store's clock (StoreOptions.Now, which tests control) is invisible at
// once to Load, List, Append and Delete. Sweep (cairn.Sweeper) erases
// expired sessions, finishes interrupted Creates and Deletes, and removes
// event documents older than StaleAfter whose session document is gone.
//
// Open also asks for a TTL index on the sessions' expires_at. MongoDB
// accepts it and then purges expired session documents by itself (on its
// own clock, about once a minute); their event documents stay, invisible,
// until Sweep or a new Create of the same ID removes them, so run Sweep
// (`cairn sessions gc`) from time to time there too. FerretDB refuses TTL
// indexes (NotImplemented); the store carries on and relies on the read
// filter and Sweep. NativeExpiry reports which case holds.
//
// # Claims
//
// Store is a cairn.Claimer, but its ClaimNext is not one atomic step:
// FerretDB does not apply an update's filter atomically with the write, so
// an exclusive claim can only rest on a unique insert, which is what
// Acquire does (see lease.go). ClaimNext queries the oldest few sessions
// that match the filter and, by the session document's lease_expires_ns
// hint, have no live lease (one query per status of the filter, at once),
// then tries Acquire on each in turn. A candidate another claimer took
// first is passed over; if every candidate was, it queries again without
// them, a bounded number of times. Safe, since of many racing Acquires
// exactly one succeeds. On MongoDB a claim costs the queries plus the
// Acquire, whatever the size of the namespace. FerretDB hands PostgreSQL
// only equality filters (the status, a single label) and sorts in its own
// process: there each query reads every session of its status, so a
// claim's cost grows with the number of waiting sessions, not finished
// ones.
//
// # Write concern
//
// The store uses the client's read and write concerns, set in the URI. With
// many workers on a replica set use w=majority (and the default
// readConcern), so that a commit acknowledged to one worker survives a
// failover and the compare-and-set of the next worker sees it. w=1 is
// faster but a failover can roll back an acknowledged append.
//
// # Limits
//
// Events larger than 16 MiB minus 4 KiB are refused with ErrTooLarge
// whatever Limits.MaxEventBytes says, since each is one document.
package mongodb
