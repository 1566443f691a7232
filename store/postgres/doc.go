// Package postgres is the cairn store for PostgreSQL: the production
// backend, shared by many workers on many machines. It is built on pgx v5
// and its connection pool, pgxpool.
//
// # Quick start
//
//	s, err := postgres.Open(ctx, "postgres://app@db.internal:5432/agents?sslmode=require",
//		cairn.StoreOptions{Namespace: "support_bot", TTL: 30 * 24 * time.Hour})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//
// Open makes and owns a pool; New takes a *pgxpool.Pool that the caller made
// and keeps (Close leaves it open), for programs that already have one.
//
// # URL
//
// The package registers the URL schemes "postgres" and "postgresql" with
// cairn.Register, so importing it for its side effect lets cairn.Open, the
// CLI and the config file reach it:
//
//	import _ "github.com/cairnhq/cairn/store/postgres"
//
//	s, err := cairn.Open(ctx, "postgres://app:secret@db.internal:5432/agents", opts)
//
// The URL is handed to pgx as it is, so everything pgxpool.ParseConfig
// understands works, such as sslmode, connect_timeout and pool_max_conns, and
// so do the PG* environment variables and a password file. Without
// pool_max_conns the pool keeps up to DefaultPoolSize (8) connections, or one
// per CPU if there are more; each process and store has its own pool, and
// together they must stay under the server's max_connections (100 by
// default). The namespace comes from cairn.StoreOptions, never from the
// URL. Errors name the server's host and port but never the password. An error that means the server could
// not be reached or could not serve (a network error, a timeout, a terminated
// connection, a server shutting down or starting up: SQLSTATE class 08,
// 57P01–57P03, 53300) wraps cairn.ErrUnavailable; the server's other answers
// (a full disk, a missing privilege or table) do not.
//
// # Schema
//
// Each namespace is a schema of its own, created on first use and named by
// Schema: "cairn_" and the namespace ("cairn_default" when none is given),
// always quoted, so case is kept and any valid namespace works; one too long
// for PostgreSQL's 63-byte names is shortened with a hash. Stores of
// different namespaces share nothing but the database. A schema holds:
//
//	sessions (id text PRIMARY KEY, created_at, updated_at, expires_at NULL,
//	          status, steps, first_message, labels jsonb, last_seq)
//	          index (updated_at DESC, id DESC) for List
//	          index (status, updated_at DESC, id DESC) for List by status
//	          index (created_at, id) for ClaimNext
//	          partial index (expires_at) for Sweep
//	          lease_holder, lease_token, lease_expires
//	session_labels (id REFERENCES sessions ON DELETE CASCADE, key, value,
//	          updated_at, PRIMARY KEY (id, key))
//	          index (key, value, updated_at DESC, id DESC) for List by label
//	          filled by a trigger after an insert into sessions (one row per
//	          label), its updated_at kept by a trigger after an update of
//	          sessions.updated_at (an append) of a session with labels
//	events   (session_id REFERENCES sessions ON DELETE CASCADE, seq, envelope bytea,
//	          PRIMARY KEY (session_id, seq))
//	schema_migrations (version PRIMARY KEY, name, applied_at)
//
// An event's envelope is its JSON ({"v":1,"seq":…,"at":…,"kind":…,"run":…,
// "data":…}) exactly as it was encoded on append, kept as bytes: jsonb would
// reorder keys and change numbers, and a load must give back the same JSON.
// IDs sort bytewise (COLLATE "C"), as cairn's cursors expect, and List's
// Prefix is a range of the primary key (id >= prefix AND id < the prefix
// with its last byte incremented; never LIKE, where '_' is a wildcard).
// Several statuses are one walk of the status index per status, each
// stopped after a page and merged, so a common status costs a page and a
// rare one what it holds. A label is one range of session_labels' index,
// already in List order: the walk stops once the page is full, and a
// label no session has costs an empty range (with several labels, the
// first by key is walked, unless the planner finds another rarer; the
// status, the prefix and the time window are checked on each session
// read). Between a prefix and a walk in List order the planner chooses by
// the tables' statistics (autovacuum keeps them; ANALYZE after a bulk
// load).
//
// Migration 0003 builds the status and label indexes with CREATE INDEX in
// its transaction: writes to the namespace wait while it runs, about two
// seconds at 200,000 sessions. Migration 0004 fills session_labels from
// the sessions' labels, builds its index and drops 0003's GIN index, in
// its transaction as well.
//
// # Migrations
//
// The schema is made by numbered SQL files embedded in the package
// (migrations/NNNN_name.sql). Open and New run the ones the schema lacks, in
// one transaction that holds an advisory lock keyed by the schema name, and
// record each in schema_migrations; many processes opening a new namespace
// at once wait for each other and each migration runs exactly once. A schema
// that is up to date costs one read and takes no lock. A schema that records
// a version newer than this package knows is refused with cairn.ErrSchemaTooNew,
// since a newer cairn may have changed what its tables mean.
//
// # Concurrency
//
// Every method may be called from many goroutines and from many processes
// and machines sharing the database.
//
// Append is one SQL statement, so one round trip and one transaction, whose
// cost does not grow with the history: an UPDATE of the session row that
// matches only if the session is live and its last_seq is the expected one,
// and an INSERT of the events that runs only if the UPDATE matched. The
// UPDATE takes the row's lock, so of two writers at the same expected seq
// exactly one succeeds and the other gets cairn.ErrConflict; the primary key
// on (session_id, seq) stands behind that check. The session's listing
// fields (status, steps, first message, updated and expiry times) change in
// the same statement, computed by driver.Summarize.
//
// Delete removes the session row, and with it every event, in one
// statement. An Append racing with it either commits first, and its events
// are deleted too, or finds no session and returns cairn.ErrNotFound: a late
// write never brings a session back. Load reads the session and its events
// in one repeatable-read transaction, so they always agree; a load from a
// seq reads the range of the events' primary key (session_id, seq) from
// there.
//
// # Snapshots
//
// Store is a cairn.Snapshotter. The snapshots table (migration 0005) holds
// a session's latest snapshot, keyed by the session, its rows deleted with
// the session's by the foreign key's cascade (Delete, Sweep, Create's
// purge of an expired session). PutSnapshot is one statement: an INSERT
// fed by the live session's row, ON CONFLICT DO UPDATE only when its seq
// is not lower, so racing puts leave the highest and a put never brings a
// deleted or expired session back. It does not write the session's row:
// its updated time and expiry stay as they are.
//
// # TTL
//
// With a TTL, each write sets the session's expires_at from the store's
// clock (cairn.StoreOptions.Now). Reads and writes treat a session whose
// expires_at has passed as gone at once; Sweep (cairn.Sweeper) deletes such
// sessions and their events to free the space, SweepBatch sessions per
// statement (each its own short transaction; the events go by the foreign
// key's cascade), and autovacuum makes the space reusable; CountExpired
// counts them without deleting. Create over an expired
// session's ID purges it first. Every machine's clock should be in sync, as
// the TTL is measured on the clock of the machine that writes or reads.
package postgres
