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
// keeps up to [DefaultPoolSize] (8) connections, or one per CPU if there
// are more; all pools together must stay under the server's
// max_connections. The namespace comes from cairn.StoreOptions, never from
// the URL. An error that means the server could not be reached or could
// not serve wraps [cairn.ErrUnavailable]; the server's other answers (a
// full disk, a missing privilege or table) do not.
//
// # Schema and migrations
//
// Each namespace is a schema of its own, named by [Schema] ("cairn_" and
// the namespace), so stores of different namespaces share nothing but the
// database. Open and New create it and run the embedded migrations it
// lacks, once, however many processes open it at once; a schema newer
// than this package knows is refused with [cairn.ErrSchemaTooNew]. Some
// migrations build indexes in their transaction, and writes to the
// namespace wait while they run: read docs/STORES.md before upgrading a
// large store.
//
// # What the store does
//
// Every method may be called from many goroutines, processes and machines
// sharing the database. Append is one statement, one round trip and one
// transaction, whose cost does not grow with the history; of two writers at
// one expected seq exactly one succeeds and the other gets
// [cairn.ErrConflict]. Delete removes a session and all it holds in one
// statement, and a racing Append never brings it back. Load reads the
// session and its events in one repeatable-read transaction. List's
// filters are each served by an index (ANALYZE after a bulk load).
//
// Store is a [cairn.Leaser], [driver.Claimer] (SELECT … FOR UPDATE SKIP
// LOCKED), [driver.Sweeper], [cairn.Snapshotter] and [driver.Searcher] (a
// tsvector per event under a GIN index, ranked by BM25). With a TTL a
// session past its expiry on the store's clock is gone at once, and Sweep
// deletes it; keep every machine's clock in sync.
//
// docs/STORES.md, "The PostgreSQL store", has the connections and errors,
// the tables and migrations, the statements, List's indexes, search,
// snapshots and expiry, step by step.
package postgres
