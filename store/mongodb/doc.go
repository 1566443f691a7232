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
//     key on (session, seq) means another writer holds the position (see
//     below).
//  2. Compare-and-set the session document: UpdateOne({_id, last_seq:
//     expectSeq, not expired, fence < start of this call}, {$set last_seq and
//     the info fields, $inc steps}). This is the commit point. If it matches
//     nothing, the call deletes its own event documents (by token) and
//     reads the session document to tell why: ErrConflict when the session
//     is at another seq; ErrNotFound when it is missing, expired or being
//     deleted, and also when it is at expectSeq again (it was missing when
//     the commit ran and has been created since: a session's seq never goes
//     back); when a fence raised after the call began refused it, the call
//     tries again.
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
// A retried append (cairn.Store's Append) meets its own events at the
// insert: when the session is past expectSeq and holds exactly these
// envelopes at these seqs, whether or not others follow them, it returns
// nil and writes nothing. Only that path reads them back.
//
// # An append that meets an uncommitted one
//
// When an insert meets a duplicate while the session's last_seq still
// equals expectSeq, another append holds the position and has not
// committed: a live writer between its two steps, or a dead one. Until one
// of them commits the race is undecided, and ErrConflict ("someone else
// appended first") would name an append that no reader can see, and that
// may never happen. So the append waits, at most CommitWait (2 s) and never
// past its context, polling the session document and the documents above
// its last_seq:
//
//   - the other append commits: the session has moved, so the answer is
//     ErrConflict (or nil, if the committed events are this call's own,
//     sent before);
//   - the other append gives up (it removes its documents) or is found
//     dead: this one tries again.
//
// If neither happens in time, the append returns an error that wraps
// cairn.ErrUnavailable: nothing of the call was written, and whether it
// would have conflicted is unknown, which is what an outage says.
//
// An uncommitted holder is dead when every document above last_seq was
// written more than StaleAfter (30 s, on the real clock) ago, before the
// session's fence (an append's, whose commit cannot match), or by this
// Store's own failed calls. The appender deletes those documents and
// retries. When some are dead only by their age, it first raises the
// session's fence to its own real-clock now, so that no append that began
// before can still commit (a writer merely paused for 30 s fails its
// commit instead of committing events that are gone); the others need no
// fence, and no write of the session document is made for them (on
// FerretDB such a write could undo a commit that their removal let
// through). This relies on the writers' clocks agreeing to well within
// StaleAfter.
//
// A Store remembers the tokens of its own failed appends: after a broken
// connection their documents may outlive their removal. When a commit (or
// a hold's write, see below) fails with an error, so that it may have been
// applied, or be applied later, its request still on its way, its
// documents keep the position for LostAfter (3 s): a request the network
// delays longer than that is taken as lost. Then, while the session is
// still at expectSeq, the fence is raised before the call's documents are
// removed; if the session has moved on they stay. These cleanups have ten
// seconds of their own: a call whose context ends first returns then, and
// its cleanup goes on without it.
//
// # Outages
//
// An error that means the server could not be reached or could not serve
// (a network error, a timeout, no server selected, a server shutting down
// or stepping down) wraps cairn.ErrUnavailable; the server's other answers
// do not.
//
// # Holds: the other writes of a session document
//
// FerretDB applies an update as a read of the whole document and a later
// write of the whole document, with no lock between: two updates of one
// document at once can lose one. A takeover's write of the session
// document (its token and fence) that raced a commit undid the commit, an
// append already acknowledged; a Delete's mark could be undone the same
// way. Commits are kept apart from each other by their events' positions.
// Every other write of a live session's document (Acquire and Takeover,
// which also read and write the lease documents under it, so that one
// that finds the session gone leaves no lease behind; Delete and Sweep
// marking it erased) first takes the session's next position with a hold
// document ({session, seq: last
// seq + 1, hold: true}), writes with last_seq in its filter, and removes
// the hold. An append that meets a hold waits for it as for any
// uncommitted append. A hold that meets an uncommitted append takes the
// position after it too, so that the appends that follow wait for the hold
// rather than pass it again and again, and waits (at most CommitWait) for
// that append to commit or give up. A hold left by a process that died is
// removed after StaleAfter, as a dead writer's events are.
//
// # Create, Delete and the states between
//
// Create inserts the session document with last_seq -1 ("creating") and a
// fence just past its real clock, deletes the documents left under that ID
// by an earlier session of the ID (expired, swept, crashed or being
// erased), all written before that fence, then sets last_seq 0: four round
// trips with the purge of an expired document of the ID. Every commit of
// the new session comes from an append that began after the fence, so its
// documents are written after it and no removal aimed at an earlier
// session reaches them. Each Create also gives the document a new random
// incarnation ("inc"), by which a Load that lost events under it tells a
// deletion from damage.
//
// Delete (and Sweep) first mark the document last_seq -2 ("erasing"), with
// busy_since the eraser's real clock, so late writers fail their commit and
// readers see nothing, then delete the event and lease documents written
// up to that mark, then the document so marked, and nothing else.
//
// A Create that finds the ID held:
//
//   - by a live session: ErrExists;
//   - by a session being erased (a Delete in progress, or one whose process
//     died or whose connection broke): the session is gone for every
//     reader, so Create takes the document over at once, with a fence past
//     the erasure's mark. A slow erasure (or its requests reaching the
//     server late) removes only what was written up to its mark, and its
//     document only while it still bears the mark, so never the new
//     session's;
//   - by another Create in progress: it waits, like an append, at most
//     CommitWait: ErrExists once the other commits, on with its own once
//     the other fails; if neither happens in time, an error that wraps
//     cairn.ErrUnavailable (ErrExists would name a session no reader sees).
//
// A document left in the creating state by a process that died is taken
// over by Create, or removed by Sweep, once it is older than StaleAfter.
//
// FerretDB removes a document as a query, then a deletion by _id: a
// session document put in place of the one the query found, in between,
// would be deleted instead. So every removal of a session document (a
// Delete's last step, Create's purge or takeover, Sweep) first takes a
// claim on that document, a document of the sessions collection named
// after the ID and the document's incarnation: of two removers only one
// removes it, and a Create waits for it to be gone before it puts its own
// there. A claim left by a remover that died is taken over after
// StaleAfter, and removed by Sweep.
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
