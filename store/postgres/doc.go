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
// Importing the package for its side effect registers the URL schemes
// "postgres" and "postgresql" with cairn.Register, for cairn.Open, the CLI
// and the config file:
//
//	import _ "github.com/cairnhq/cairn/store/postgres"
//
// # URL and connections
//
// The URL goes to pgx as it is: everything pgxpool.ParseConfig understands
// works (sslmode, connect_timeout, pool_max_conns, …), and so do the PG*
// environment variables and a password file. Without pool_max_conns a pool
// keeps up to DefaultPoolSize (8) connections, or one per CPU if there are
// more; each process and store has its own pool, and together they must stay
// under the server's max_connections (100 by default). The namespace comes
// from cairn.StoreOptions, never from the URL.
//
// Errors name the server's host and port, never the password. An error that
// means the server could not be reached or could not serve (a network error,
// a timeout, a terminated connection, a server shutting down or starting up:
// SQLSTATE class 08, 57P01–57P03, 53300) wraps cairn.ErrUnavailable; the
// server's other answers (a full disk, a missing privilege or table) do not.
//
// # Schema and migrations
//
// Each namespace is a schema of its own, named by Schema ("cairn_" and the
// namespace; "cairn_default" when none is given), so stores of different
// namespaces share nothing but the database. Open and New create it and run
// the embedded migrations it lacks, once, however many processes open it at
// once; an up-to-date schema costs one read. A schema newer than this
// package knows is refused with cairn.ErrSchemaTooNew. Migrations 0003 and
// 0004 build indexes inside their transaction: writes to the namespace wait
// while they run (about two seconds at 200,000 sessions).
//
// # Concurrency
//
// Every method may be called from many goroutines and from many processes
// and machines sharing the database. Append is one statement, one round trip
// and one transaction, whose cost does not grow with the history; of two
// writers at one expected seq exactly one succeeds and the other gets
// cairn.ErrConflict. Delete removes a session and all it holds in one
// statement: a racing Append commits first (and is deleted too) or gets
// cairn.ErrNotFound. Load reads the session and its events in one
// repeatable-read transaction, so they agree. List's filters (status, label,
// prefix) are each served by an index, so a rare filter costs what it
// matches (ANALYZE after a bulk load).
//
// Store is a cairn.Leaser, cairn.Claimer (SELECT … FOR UPDATE SKIP LOCKED),
// cairn.Sweeper and cairn.Snapshotter. A snapshot put never changes the
// session's updated time or expiry, and racing puts leave the highest.
//
// # Search
//
// Store is a cairn.Searcher. Append writes, in its one statement, a row
// per event with text to search into the session_text table: the text's
// tokens (longterm.Tokens, as every backend splits them) as a tsvector,
// searched through a GIN index, and its length. Search finds the matching
// events through that index and scores them in Go by BM25 as SQLite's
// FTS5 does, over the namespace's events (expired sessions not yet swept
// count in the statistics but are never returned); its cost follows the
// events matched, so a word in most events reads most of the index.
// Deleting a session deletes its rows with it, whether by Delete, Sweep
// or Create's purge. Migrations 0008 and 0009 index the events already
// stored, in their transaction: writes to the namespace wait while they
// run (about 8 seconds per 100,000 events on two busy cores). Processes
// running an older cairn keep appending without indexing: upgrade them
// all.
//
// # TTL
//
// With a TTL, each write sets the session's expiry from the store's clock
// (cairn.StoreOptions.Now), and a session past it is gone at once for every
// read and write. Sweep deletes expired sessions SweepBatch at a time, each
// batch a short transaction, and CountExpired counts them. Keep every
// machine's clock in sync: the TTL is measured on the clock of the machine
// that writes or reads.
//
// The tables, the statements and List's indexes, step by step:
// docs/STORES.md, "The PostgreSQL store".
package postgres
