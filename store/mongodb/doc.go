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
// How appends, holds, creation and deletion, expiry, claims and snapshots work, and
// why, step by step: docs/STORES.md, "The MongoDB store".
package mongodb
