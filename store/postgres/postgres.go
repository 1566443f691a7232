package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

func init() { driver.RegisterByURL(Open, "postgres", "postgresql") }

// Store is a cairn.Store on a PostgreSQL database, seeing one namespace: the
// tables of one schema. Many Stores, in one process or on many machines, may
// share a database and a namespace.
type Store struct {
	pool    *pgxpool.Pool
	ownPool bool
	opts    cairn.StoreOptions
	schema  string
	sql     statements
	guard   driver.Guard
}

var (
	_ cairn.Store    = (*Store)(nil)
	_ driver.Sweeper = (*Store)(nil)
)

// DefaultPoolSize is the most connections the pool of a store made by
// Open keeps when its URL does not set pool_max_conns, unless the machine
// has more CPUs (pgx's own default: max(4, CPUs)). Connections are opened
// only when that many calls run at once, so a process that runs one
// session at a time holds one. On two CPUs pgx's four made a process that
// ran eight sessions at once queue half its appends for a connection:
// eight connections took 8 sessions from 1.8–1.9× one session's appends
// per second to 2.4–2.9× (docs/PERFORMANCE.md).
const DefaultPoolSize = 8

// Open connects to the database a PostgreSQL URL or key=value DSN names
// (anything pgxpool.ParseConfig accepts, such as
// "postgres://user@host:5432/db?sslmode=disable&pool_max_conns=16"), creates
// the namespace's schema and tables if need be, and returns a store that owns
// the connection pool: Close closes it. The pool keeps at most
// pool_max_conns connections, or DefaultPoolSize. It fails with an error
// naming the server's address (never the password) when the server cannot
// be reached.
func Open(ctx context.Context, dsn string, opts cairn.StoreOptions) (*Store, error) {
	pool, cfg, err := newPool(ctx, dsn)
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, pool, opts)
	if err != nil {
		pool.Close()
		if errors.Is(err, cairn.ErrInvalidID) || errors.Is(err, cairn.ErrSchemaTooNew) {
			return nil, err
		}
		return nil, fmt.Errorf("open postgres store at %s: %w (is PostgreSQL running there, and do the URL's host, port, user and database match it?)", address(cfg), err)
	}
	s.ownPool = true
	return s, nil
}

// newPool makes the pool Open and OpenLongTerm use: at most
// pool_max_conns connections, or DefaultPoolSize.
func newPool(ctx context.Context, dsn string) (*pgxpool.Pool, *pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors already hide the password.
		return nil, nil, fmt.Errorf("open postgres store: %w", err)
	}
	if !setsPoolSize(dsn) {
		cfg.MaxConns = max(cfg.MaxConns, DefaultPoolSize)
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "cairn"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("open postgres store at %s: %w", address(cfg), err)
	}
	return pool, cfg, nil
}

// New returns a store on a pool the caller made and keeps: Close leaves the
// pool open. Like Open, it creates the namespace's schema and tables if need
// be, under a lock, so many processes may call it at once.
func New(ctx context.Context, pool *pgxpool.Pool, opts cairn.StoreOptions) (*Store, error) {
	if pool == nil {
		return nil, errors.New("new postgres store: the pool is nil")
	}
	opts, err := driver.Options(opts)
	if err != nil {
		return nil, err
	}
	schema := Schema(opts.Namespace)
	if err := migrate(ctx, pool, schema); err != nil {
		return nil, translate(err)
	}
	return &Store{pool: pool, opts: opts, schema: schema, sql: newStatements(schema)}, nil
}

// Schema returns the name of the schema that holds a namespace's tables:
// "cairn_" followed by the namespace. A namespace too long for PostgreSQL's
// 63-byte names keeps its first 40 characters, then "~" and 16 hex digits of
// its SHA-256, so distinct namespaces never share a schema. The name is
// always quoted in SQL, so case is kept.
func Schema(namespace string) string {
	const maxIdent = 63
	name := "cairn_" + namespace
	if len(name) <= maxIdent {
		return name
	}
	sum := sha256.Sum256([]byte(namespace))
	return "cairn_" + namespace[:40] + "~" + hex.EncodeToString(sum[:8])
}

// Schema returns the name of the schema the store reads and writes.
func (s *Store) Schema() string { return s.schema }

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close releases the store. It closes the pool if Open made it and leaves a
// pool given to New open. It is safe to call twice; afterwards every method
// returns cairn.ErrClosed.
func (s *Store) Close() error {
	if !s.guard.Close() {
		return nil
	}
	if s.ownPool {
		s.pool.Close()
	}
	return nil
}

// address is host:port of the first server a pool config names, for errors.
func address(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	if len(c.Host) > 0 && c.Host[0] == '/' {
		return c.Host // a Unix socket folder
	}
	return net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
}

// ErrSchemaTooNew is returned by Open and New when the namespace's schema
// records a migration newer than this package knows: a newer cairn has
// migrated it, and this one must not guess what its tables now mean.
//
// Deprecated: it is cairn.ErrSchemaTooNew, the one error of every store.
var ErrSchemaTooNew = cairn.ErrSchemaTooNew

// liveSQL is the condition a session row meets while it has not expired at
// the time bound to the given parameter.
func liveSQL(param string) string {
	return "(expires_at IS NULL OR expires_at > " + param + ")"
}

// statements are the store's SQL, with the schema's tables named in full.
type statements struct {
	sessions, labels string
	create, purge    string
	append, tail     string
	appendOne        string // append of a single event
	info, loadEvents string
	del, sweep       string
	countExpired     string
	search           string // search.go

	putSnapshot, loadSnapshot, dropSnapshot string // snapshot.go
}

// appendSQL is the part of an append's statement before its final SELECT:
// u, the UPDATE that moves the live session row from $2 to $3 (and, with
// fence set, only while that condition holds), and ins, the INSERT of the
// events that runs only if u matched. Its parameters are $1 id, $2 the
// expected seq, $3 the new last seq, $4 now, $5 the new expiry, $6 the
// steps to add, $7 the new status (empty to keep it), $8 whether the events
// hold a first message, $9 that message, and the events' seqs and
// envelopes: $10 and $11 as arrays, or, with one set, as the one event's.
func appendSQL(sessions, events, fence string, one bool) string {
	rows := "e.seq, e.envelope FROM u, unnest($10::bigint[], $11::bytea[]) AS e(seq, envelope)"
	if one {
		rows = "$10::bigint, $11::bytea FROM u"
	}
	if fence != "" {
		fence = " AND " + fence
	}
	return `WITH u AS (
				UPDATE ` + sessions + ` SET
					last_seq = $3, updated_at = $4, expires_at = $5,
					steps = steps + $6::integer,
					status = CASE WHEN $7::text = '' THEN status ELSE $7::text END,
					first_message = CASE WHEN first_message = '' AND $8::boolean THEN $9::text ELSE first_message END
				WHERE id = $1 AND last_seq = $2 AND ` + liveSQL("$4") + fence + `
				RETURNING id
			), ins AS (
				INSERT INTO ` + events + ` (session_id, seq, envelope)
				SELECT u.id, ` + rows + `
			)`
}

// appendResult is the final SELECT of a plain append's statement: whether
// the UPDATE matched, and when it did not, the session's last seq as the
// statement's snapshot holds it, from before the UPDATE, and 1 when the
// session holds the append's events there (heldSQL), 0 when not, as one
// array from an InitPlan that runs only then (a column of its own, its own
// InitPlan, cost a matched append 4% more).
func appendResult(sessions, events string, one bool) string {
	return " SELECT EXISTS (SELECT 1 FROM u), CASE WHEN EXISTS (SELECT 1 FROM u) THEN NULL ELSE (SELECT ARRAY[s.last_seq, (" +
		heldSQL(events, one) + ")::integer::bigint] FROM " + sessions +
		" s WHERE s.id = $1 AND (s.expires_at IS NULL OR s.expires_at > $4)) END"
}

// heldSQL is whether the session row s holds, in the statement's snapshot,
// exactly the append's events at its seqs ($2, $3], whether or not others
// follow them: a retry of an append whose reply was lost, already done. It
// reads the events only when the session has reached $3. The decision is
// the snapshot's: a read after the statement may find the session deleted
// and created again, whose seq says nothing of this append.
func heldSQL(events string, one bool) string {
	envs := "$11::bytea[]"
	if one {
		envs = "ARRAY[$11::bytea]"
	}
	return "CASE WHEN $2 >= 0 AND s.last_seq >= $3 THEN ARRAY(SELECT e.envelope FROM " + events +
		" e WHERE e.session_id = $1 AND e.seq > $2 AND e.seq <= $3 ORDER BY e.seq) = " + envs + " ELSE false END"
}

func newStatements(schema string) statements {
	sessions := pgx.Identifier{schema, "sessions"}.Sanitize()
	events := pgx.Identifier{schema, "events"}.Sanitize()
	putSnapshot, loadSnapshot, dropSnapshot := snapshotStatements(sessions, pgx.Identifier{schema, "snapshots"}.Sanitize())
	return statements{
		putSnapshot: putSnapshot, loadSnapshot: loadSnapshot, dropSnapshot: dropSnapshot,
		sessions: sessions,
		labels:   pgx.Identifier{schema, "session_labels"}.Sanitize(),
		purge:    "DELETE FROM " + sessions + " WHERE id = $1 AND expires_at IS NOT NULL AND expires_at <= $2",
		create: "INSERT INTO " + sessions + ` (id, created_at, updated_at, expires_at, status, labels)
			VALUES ($1, $2, $3, $4, $5, $6::jsonb) ON CONFLICT (id) DO NOTHING`,
		// One statement, so one round trip and one transaction: the
		// UPDATE does the expected-seq check and locks the session row;
		// the INSERT runs only if it matched; the primary key on
		// (session_id, seq) backs the check up. It returns whether it
		// matched and, only when it did not, the live session's last seq
		// in the statement's snapshot (NULL: no live session then) and
		// whether it holds the append's events: the answer to why, but
		// for a row that changed while the statement ran (whyNot).
		// Its events' text is indexed in the same statement (textSQL).
		append:    appendSQL(sessions, events, "", false) + textSQL(schema, 12, false) + appendResult(sessions, events, false),
		appendOne: appendSQL(sessions, events, "", true) + textSQL(schema, 12, true) + appendResult(sessions, events, true),
		// Why an append whose snapshot had the session at the expected
		// seq matched nothing, read after the append: the live session's
		// last seq and, when it has the append's seqs, the envelopes
		// stored at them, to tell a retry from a conflict. $1 id, $2 now,
		// $3 the expected seq, $4 the append's last seq.
		tail: "SELECT s.last_seq, CASE WHEN s.last_seq >= $4 THEN ARRAY(SELECT e.envelope FROM " + events +
			" e WHERE e.session_id = $1 AND e.seq > $3 AND e.seq <= $4 ORDER BY e.seq) END FROM " + sessions +
			" s WHERE s.id = $1 AND " + liveSQL("$2"),
		info: "SELECT " + infoColumns + " FROM " + sessions + " WHERE id = $1 AND " + liveSQL("$2"),
		loadEvents: "SELECT seq, envelope FROM " + events + " WHERE session_id = $1 AND seq >= $2" +
			" AND seq <= (SELECT last_seq FROM " + sessions + " WHERE id = $1) ORDER BY seq",
		del: "DELETE FROM " + sessions + " WHERE id = $1 RETURNING " + liveSQL("$2"),
		// $1 now, $2 the batch size: the batch's rows are locked first,
		// skipping those another transaction holds; the foreign keys'
		// cascade deletes their events and snapshots.
		// $3: the latest expiry the previous batch deleted. Starting
		// each batch there, not at the index's start, steps over the
		// index entries of the rows deleted before, which stay until a
		// vacuum: from the start, each batch walked all of them, and a
		// sweep of 100,000 sessions at a million took 6 minutes.
		sweep: `WITH doomed AS (
				SELECT id FROM ` + sessions + ` WHERE expires_at IS NOT NULL AND expires_at >= $3 AND expires_at <= $1
				ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED),
			gone AS (DELETE FROM ` + sessions + ` AS s USING doomed WHERE s.id = doomed.id AND s.expires_at <= $1
				RETURNING s.expires_at)
			SELECT count(*), max(expires_at) FROM gone`,
		countExpired: "SELECT count(*) FROM " + sessions + " WHERE expires_at IS NOT NULL AND expires_at <= $1",
		search:       searchSQL(schema),
	}
}

// setsPoolSize reports whether a URL or key=value DSN sets pool_max_conns:
// pgx reads the settings it does not know into the runtime parameters,
// where pgxpool finds its own.
func setsPoolSize(dsn string) bool {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return false
	}
	_, ok := cfg.RuntimeParams["pool_max_conns"]
	return ok
}
