// Package sqlite is cairn's embedded default store: every session in one
// SQLite database file, through the pure-Go driver modernc.org/sqlite (no
// cgo, no server).
//
// # Quick start
//
//	s, err := sqlite.Open(ctx, ".cairn/cairn.db", sqlite.Options{})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//
// or, by URL, after importing this package for its side effect:
//
//	s, err := cairn.Open(ctx, "sqlite:///.cairn/cairn.db", cairn.StoreOptions{})
//
// Open creates the folder (mode 0700) and the file (mode 0600) if they are
// missing, and runs the embedded migrations the file lacks; a file written
// by a newer cairn is refused with [cairn.ErrSchemaTooNew]. Stores opened
// on one file with different namespaces never see each other's sessions.
//
// # URLs
//
// The scheme "sqlite" is registered with cairn.Register:
//
//	sqlite:///abs/path/cairn.db    an absolute path
//	sqlite:relative/path/cairn.db  a path relative to the working directory
//	sqlite:///.cairn/cairn.db      relative as well: when the first segment
//	                               starts with '.', the path is taken from
//	                               the working directory (.cairn/cairn.db)
//
// The one query parameter is synchronous=full|normal; any other is an error
// that names it.
//
// # Durability and concurrency
//
// The file runs in WAL mode. synchronous=FULL, the default, fsyncs every
// commit before Append returns; [Options].Synchronous "NORMAL" skips it,
// and the last commits may be lost to a power loss. All writes of a Store
// go through one connection, and the appends its goroutines make at once
// share one commit (a group commit); reads use a pool of their own.
// Several processes may share the file: each waits up to [BusyTimeout]
// for a lock, after which the call fails with [cairn.ErrUnavailable].
//
// An Append costs the same whatever the length of the history, and List
// reads rows bounded by its page or by what its filters match. With a TTL
// an expired session is invisible at once; Sweep deletes it for good and,
// in a file this version created, gives the freed pages back.
//
// # What the store does
//
// Store is a [cairn.Leaser], [driver.Sweeper], [cairn.Snapshotter],
// [driver.Checker] and [driver.Searcher] (FTS5, ranked by bm25), and the
// same file holds long-term memory ([LongTerm]). Each stored event carries
// a CRC-32C: a session whose events fail it, or whose rows were deleted or
// changed from outside the store, is a *driver.DamagedError, listed as
// damaged, and nothing more is appended to it. Delete erases a session in
// one transaction with secure_delete on; the WAL may hold copies of its
// pages until the next checkpoint.
//
// docs/STORES.md, "The SQLite store", has the schema and its migrations,
// the group commit, leases, search, List's plans on a large store, Sweep
// and VACUUM, damage, and what Delete guarantees; docs/RELIABILITY.md,
// "Damaged storage", the rules of every local store.
package sqlite
