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
// # File layout
//
// Open creates the folder (mode 0700) and the database file (mode 0600) if
// they are missing; SQLite creates the -wal and -shm files beside it with
// the same mode. The schema is made by numbered migrations embedded in the
// package (migrations/0001_init.sql, …), applied on open in one
// transaction and recorded in the schema_migrations table (version,
// applied_at); a file whose recorded version is newer than the package
// knows is refused with cairn.ErrSchemaTooNew. The tables:
//
//   - sessions, keyed by (namespace, id): created_at, updated_at and
//     expires_at as Unix nanoseconds (expires_at 0: never), status, steps,
//     first_message, labels as a JSON object and last_seq — what List shows,
//     kept up to date by every Append, so listing never replays a history.
//     Indexes on (namespace, updated_at DESC, id DESC) and (namespace,
//     status, updated_at DESC, id DESC) serve List in its order; the
//     primary key serves lookups by ID and List's Prefix (a range: id >=
//     prefix AND id < the prefix with its last byte incremented, never
//     LIKE); a partial index on (namespace, expires_at) serves Sweep.
//   - session_labels, keyed by (namespace, session_id, key), with value
//     and updated_at: one row per label, written by Create with the
//     session and erased with it; a trigger on sessions
//     (session_labels_follow, after an update of updated_at of a session
//     with labels) copies each Append's updated_at to the session's label
//     rows in the same transaction. An index on (namespace, key, value,
//     updated_at DESC, session_id DESC) gives the sessions of a label in
//     List order. Migration 0003 made the table and filled it from the
//     sessions already stored; 0004 added updated_at, its index and the
//     trigger.
//   - events, keyed by (namespace, session_id, seq): each event's JSON
//     envelope {"v","seq","at","kind","run","data"}, with its data kept as
//     it was appended, led by a checksum of itself (see Damage below).
//     Load from a seq reads the range of this key from there. Triggers on
//     it mark a session damaged in its row (status and damage) when one of
//     its rows is deleted or changed from outside the store; migration
//     0006 added them and the column.
//   - snapshots, keyed by (namespace, session_id): the session's latest
//     snapshot (cairn.Snapshotter), its seq and its bytes. PutSnapshot is
//     one INSERT … SELECT from the live session's row … ON CONFLICT DO
//     UPDATE that keeps the higher seq; Delete, Sweep and Create over an
//     expired session erase it with the session's row, in the same
//     transaction. Migration 0005 made it.
//
// A namespace is a value of the namespace column: stores opened on one file
// with different namespaces never see each other's sessions.
//
// # Long-term memory
//
// The same file holds long-term memory (package longterm): LongTerm, opened
// by OpenLongTerm or longterm.Open with the same URL, keeps items in
// longterm_items (a unique index on the namespace in path order and the
// key), their texts in the FTS5 index longterm_text (ranked with bm25;
// its content is the items table's, and secure-delete takes an erased
// item's tokens out of its pages), their vectors as BLOBs compared in Go,
// and the last version given in longterm_revision. Migration 0007 made
// them. docs/MEMORY.md tells how a search runs and what an erasure
// leaves.
//
// # Search
//
// Store is a cairn.Searcher. Append writes the text of each event that has
// one (cairn.Event.SearchText) to search_texts, keyed by the event, and
// into the FTS5 index search_index (its content is that table's, with
// secure-delete on, tokenized as longterm.Tokens does), in the transaction
// of the events. Search ranks by FTS5's bm25(), whose statistics (the
// number of texts, their average length, the texts per word) cover the
// whole file, every namespace; the best events are joined to the live
// sessions of the store's namespace, the best per session kept. A trigger
// on events deletes an event's text with its row, and one on search_texts
// its entries in the index: Delete, Sweep and Create over an expired
// session erase them with the session, each token through a seek in the
// index (secure-delete), which makes an erasure cost several times what its
// rows alone cost (BenchmarkDelete). Migration 0008 made them and indexed
// the events already stored, in the transaction that migrates (13 s for
// 400,000 events, measured on a small shared machine).
//
// # A large store
//
// Every List reads a number of rows bounded by its page or by what its
// filters match, whatever the size of the namespace: a status walks its
// range of the status index; several statuses walk one range each, merged;
// a label walks its range of the label index, in List order, and stops
// once the page is full (with several labels, the one with the fewest
// sessions; the others, the status and the time window are checked on
// each session read); a prefix held by fewer than 10,000 sessions reads
// those and sorts them, a more common one walks the namespace in List
// order and stops once the page is full. Each connection has a 16 MiB
// page cache.
// Measured at 200,000 sessions of 4 events: a status, a label or a prefix
// with few or no matches answers in under a millisecond or two, as the
// first page does.
//
// Sweep deletes expired sessions 64 per transaction, so other writers wait
// for one short batch at most, not for the whole sweep. A database created
// by this version has auto_vacuum=INCREMENTAL, and Sweep gives the pages it
// freed back to the file system afterwards (PRAGMA incremental_vacuum, a
// megabyte per step). A file created before keeps its free pages for
// reuse, so it never grows for them but does not shrink either; to switch
// it, run once, with no cairn process using the file:
//
//	sqlite3 .cairn/cairn.db 'PRAGMA auto_vacuum = INCREMENTAL; VACUUM;'
//
// VACUUM rewrites the whole file (it needs as much free disk again) and
// holds the write lock while it runs.
//
// # Durability and concurrency
//
// The database runs in WAL mode. All writes of a Store go through one
// connection, whose transactions begin IMMEDIATE (they take the write lock
// up front); reads use a separate pool of query-only connections, which
// WAL lets run alongside the writer. Every connection waits up to
// BusyTimeout for a lock, so several processes may share the file: their
// writers wait for each other instead of failing, and processes may open
// a new file at the same moment. SQLite's lock is not a
// fair queue, though: a process that appends without pause can keep
// another waiting, up to BusyTimeout, after which that Append fails.
//
// synchronous=FULL is the default: an Append returns after its commit is
// fsynced and survives a power loss. Options.Synchronous "NORMAL" (URL
// ?synchronous=normal) skips that fsync: a commit survives a crash of the
// process but the last few may be lost if the machine loses power.
//
// An Append is one transaction that reads the session's row by its key,
// inserts the events and updates the row (and, by the trigger, the
// updated_at of the session's label rows): its cost does not depend on the
// length of the history. The appends that one Store's goroutines make at
// once share transactions (a group commit): appends that arrive while the
// writer is busy wait, and the next transaction takes all of them, so
// that one commit, one fsync, makes them all durable. Before it takes
// them, the transaction waits until as many appends wait as the last
// commit held, or a quarter of that commit's time (a millisecond at most)
// has passed: sessions that append without pause then share one commit
// instead of taking turns in two. After a commit of a single append, as
// with a single writer, it does not wait. Expiry (StoreOptions.TTL) is checked on every read
// against the store's clock, so a session is invisible the moment it
// expires; Sweep deletes expired sessions and their events for good.
//
// # Damage
//
// Each stored envelope starts with the CRC-32C of the rest:
// {"crc32c":"1a2b3c4d","v":1,…}. Load checks every event it reads against
// its checksum, and the seqs against the session's last seq; a session
// that fails is damaged (a *driver.DamagedError naming it and the seq),
// List shows it as cairn.StatusDamaged from then on, and nothing more is
// appended to it. Events written before the checksum existed start with
// {"v": and are read as before, unchecked; a version of cairn without the
// checksum still reads the new ones.
//
// An event row deleted or changed from outside the store (the sqlite3
// shell, another program) is recorded when it happens: the store only
// inserts event rows, and erases a session's row before its events, so
// triggers on the events table (migration 0006) mark the session of a row
// deleted or updated while its row is there: status damaged, and a damage
// column saying which seq and how. List, which reads the sessions table
// alone, then shows the session as damaged in every process, under every
// filter, before anything loads it; Load, Append and Check refuse it. An
// append pays nothing for it; an erasure runs the trigger once for each
// event it deletes, about 5 µs each (BenchmarkDelete). A gap made before the migration, or by a program that
// dropped the triggers, is found by Load and Check as before.
//
// Every connection runs with cell_size_check on, so SQLite checks each
// b-tree page as it reads it. Once SQLite answers SQLITE_CORRUPT or
// SQLITE_NOTADB, the error wraps cairn.ErrDamaged and the Store writes
// nothing more to the file (reads go on, so that what still loads can be
// copied out). SQLITE_BUSY and SQLITE_LOCKED after BusyTimeout wrap
// cairn.ErrUnavailable; a full disk, an I/O error, a refused permission or a
// read-only file are reported as SQLite names them, and are not outages.
// Check (cairn.Checker, run by `cairn doctor`) runs PRAGMA quick_check and
// loads every session. docs/RELIABILITY.md ("Damaged storage") has the
// rules of every local store.
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
// # What Delete guarantees
//
// Delete removes the session's events and row in one transaction; an
// Append that comes later gets cairn.ErrNotFound and never brings the
// session back. secure_delete is on, so SQLite overwrites the freed space
// in the database file with zeros. Until the next checkpoint, though, the
// WAL file may still hold copies of pages written before the delete, old
// event bytes included; SQLite checkpoints on its own as the WAL grows, and
// when the last connection to the file closes.
package sqlite
