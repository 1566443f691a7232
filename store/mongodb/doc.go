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
// whatever Limits.MaxEventBytes says, since each is one document; so are
// snapshots (cairn.Snapshotter) of that size. Compacting a long session's
// memory keeps its snapshot small.
//
// # Design
//
// An Append is atomic without transactions: its events go in as documents
// under a unique (session, seq) index and commit with a compare-and-set of
// the session document, so a session never shows half an append and two
// writers at one seq cannot both win. A writer that dies between the two
// holds the session's next position for StaleAfter; a resume then is refused
// with an outage until it is stale. Leases, fencing tokens and ClaimNext
// work on FerretDB as on MongoDB. With a TTL, expired sessions are invisible
// at once and Sweep removes them. Snapshots live in a collection of their
// own, one document per put, so that puts racing each other leave the
// highest even on FerretDB.
//
// # Search
//
// Store is a driver.Searcher whose text index lives in the event documents:
// each holds the hashes of its text's distinct tokens (with a multikey
// index on MongoDB), the counts of those that occur twice or more, and
// its length. So the insert that writes an append's events writes their
// entries, its commit commits them, and an erasure removes them with the
// events; an entry of an append that failed lies above its session's last
// seq, where Search, like Load, reads nothing. A search queries the
// longest token of each word of the query, then the sessions found, and
// scores BM25 as SQLite's FTS5 does, over the namespace's statistics (the
// count and length of indexed events in NS.search, which commits and
// erasures keep, each store sending its part every 100 ms and before its
// searches: a crash or a lost reply can leave them off a little, which
// moves scores, not results). The first Open of a namespace written by an earlier version
// indexes its events. FerretDB 1.x cannot keep the index on tokens: there
// a search reads every event document of the namespace. An event too
// large for its entry beside it in one document (several MiB) is indexed
// by the tokens that fit, its first.
//
// How appends, holds, creation and deletion, expiry, claims and snapshots work, and
// why, step by step: docs/STORES.md, "The MongoDB store".
package mongodb
