package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/redis"
	_ "modernc.org/sqlite" // the floor's SQLite driver
)

// memFloor keeps rows in memory.
type memFloor struct {
	mu   sync.Mutex
	log  [][]byte
	rows map[string][][]byte
}

func (f *memFloor) write(_ context.Context, body []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, slices.Clone(body))
	return nil
}

func (f *memFloor) put(_ context.Context, name string, rows [][]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows[name] = rows
	return nil
}

func (f *memFloor) get(_ context.Context, name string) ([][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]byte, len(f.rows[name]))
	for i, r := range f.rows[name] {
		out[i] = slices.Clone(r)
	}
	return out, nil
}

func (f *memFloor) close(context.Context) error { return nil }

// fileFloor appends to a file of its own and fsyncs; rows are lines of a
// file per name.
type fileFloor struct {
	dir string
	f   *os.File
}

func newFileFloor(dir string) (*fileFloor, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &fileFloor{dir: dir, f: f}, nil
}

func (f *fileFloor) write(_ context.Context, body []byte) error {
	if _, err := f.f.Write(body); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *fileFloor) put(_ context.Context, name string, rows [][]byte) error {
	return os.WriteFile(filepath.Join(f.dir, name), append(bytes.Join(rows, []byte("\n")), '\n'), 0o600)
}

func (f *fileFloor) get(_ context.Context, name string) ([][]byte, error) {
	data, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		return nil, err
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")), nil
}

func (f *fileFloor) close(context.Context) error {
	f.f.Close()
	return os.RemoveAll(f.dir)
}

// sqlFloor inserts rows into bare tables of a database/sql database.
type sqlFloor struct {
	db   *sql.DB
	path string
	n    int64
}

func newSQLiteFloor(ctx context.Context, path string) (*sqlFloor, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE floor (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		db.Close()
		return nil, err
	}
	return &sqlFloor{db: db, path: path}, nil
}

func (f *sqlFloor) write(ctx context.Context, body []byte) error {
	f.n++
	_, err := f.db.ExecContext(ctx, `INSERT INTO floor (id, body) VALUES (?, ?)`, f.n, string(body))
	return err
}

func (f *sqlFloor) put(ctx context.Context, name string, rows [][]byte) error {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE "rows_`+name+`" (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		return err
	}
	for i, r := range rows {
		if _, err := tx.ExecContext(ctx, `INSERT INTO "rows_`+name+`" (id, body) VALUES (?, ?)`, i, string(r)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (f *sqlFloor) get(ctx context.Context, name string) ([][]byte, error) {
	rows, err := f.db.QueryContext(ctx, `SELECT body FROM "rows_`+name+`" ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanBodies(rows)
}

// scanBodies reads the rows of a query of one column, of *sql.Rows or
// pgx.Rows.
func scanBodies(rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}) ([][]byte, error) {
	var out [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

func (f *sqlFloor) close(context.Context) error {
	f.db.Close()
	for _, s := range []string{"", "-wal", "-shm"} {
		os.Remove(f.path + s)
	}
	return nil
}

// sqliteSize checkpoints the WAL of the database at path into it and
// returns its size.
func sqliteSize(ctx context.Context, path string) (int64, bool, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, false, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return 0, false, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false, err
	}
	return fi.Size(), true, nil
}

// pgSQLFloor inserts into bare tables in the store's schema.
type pgSQLFloor struct {
	s *postgres.Store
	n int64
}

func pgFloor(ctx context.Context, b *backend, s *postgres.Store) error {
	b.floorName = "one-row autocommit INSERT of 1 KB"
	f := &pgSQLFloor{s: s}
	if _, err := s.Pool().Exec(ctx, `CREATE TABLE `+f.table("floor")+` (id bigint PRIMARY KEY, body text NOT NULL)`); err != nil {
		return err
	}
	b.floor = f
	b.size = func(ctx context.Context, _ []string) (int64, bool, error) {
		var n int64
		err := s.Pool().QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname IN ('sessions', 'events', 'snapshots')`, s.Schema()).Scan(&n)
		return n, err == nil, err
	}
	return nil
}

func (f *pgSQLFloor) table(name string) string { return pgx.Identifier{f.s.Schema(), name}.Sanitize() }

func (f *pgSQLFloor) write(ctx context.Context, body []byte) error {
	f.n++
	_, err := f.s.Pool().Exec(ctx, `INSERT INTO `+f.table("floor")+` (id, body) VALUES ($1, $2)`, f.n, string(body))
	return err
}

func (f *pgSQLFloor) put(ctx context.Context, name string, rows [][]byte) error {
	t := "rows_" + name
	if _, err := f.s.Pool().Exec(ctx, `CREATE TABLE `+f.table(t)+` (id bigint PRIMARY KEY, body text NOT NULL)`); err != nil {
		return err
	}
	src := make([][]any, len(rows))
	for i, r := range rows {
		src[i] = []any{int64(i), string(r)}
	}
	_, err := f.s.Pool().CopyFrom(ctx, pgx.Identifier{f.s.Schema(), t}, []string{"id", "body"}, pgx.CopyFromRows(src))
	return err
}

func (f *pgSQLFloor) get(ctx context.Context, name string) ([][]byte, error) {
	rows, err := f.s.Pool().Query(ctx, `SELECT body FROM `+f.table("rows_"+name)+` ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanBodies(rows)
}

// close drops the namespace's schema, the store's tables with the floor's.
func (f *pgSQLFloor) close(ctx context.Context) error {
	_, err := f.s.Pool().Exec(ctx, `DROP SCHEMA `+pgx.Identifier{f.s.Schema()}.Sanitize()+` CASCADE`)
	return err
}

// redisFloor pushes onto lists of its own under the namespace's prefix.
type redisFloorT struct {
	c      goredis.UniversalClient
	prefix string
}

func redisFloor(b *backend, s *redis.Store) {
	f := &redisFloorT{c: s.Client(), prefix: "cairn:" + b.ns + ":"}
	b.floorName, b.floor = "RPUSH of 1 KB", f
	b.atomicName, b.atomic = "EVALSHA of a script that checks the list's length, then RPUSHes 1 KB", &redisCASFloor{f: f}
	b.size = func(ctx context.Context, _ []string) (int64, bool, error) {
		var n int64
		err := f.each(ctx, func(k string) error {
			if bytes.Contains([]byte(k), []byte(":floor")) {
				return nil
			}
			m, err := f.c.MemoryUsage(ctx, k, 0).Result()
			n += m
			return err
		})
		return n, err == nil, err
	}
}

func (f *redisFloorT) each(ctx context.Context, fn func(string) error) error {
	it := f.c.Scan(ctx, 0, f.prefix+"*", 1000).Iterator()
	for it.Next(ctx) {
		if err := fn(it.Val()); err != nil {
			return err
		}
	}
	return it.Err()
}

func (f *redisFloorT) write(ctx context.Context, body []byte) error {
	return f.c.RPush(ctx, f.prefix+":floor", body).Err()
}

// redisCASFloor is the least compare-and-append Redis can do in one round
// trip: a script that pushes only at the expected length.
type redisCASFloor struct {
	f *redisFloorT
	n int64
}

var casPush = goredis.NewScript(`
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[2])
return 1
`)

func (c *redisCASFloor) write(ctx context.Context, body []byte) error {
	ok, err := casPush.Run(ctx, c.f.c, []string{c.f.prefix + ":floor-cas"}, c.n, body).Int()
	if err == nil && ok != 1 {
		err = fmt.Errorf("the list is not %d long", c.n)
	}
	c.n++
	return err
}

func (f *redisFloorT) put(ctx context.Context, name string, rows [][]byte) error {
	for c := range slices.Chunk(rows, 500) {
		vals := make([]any, len(c))
		for i, r := range c {
			vals[i] = r
		}
		if err := f.c.RPush(ctx, f.prefix+":floor:"+name, vals...).Err(); err != nil {
			return err
		}
	}
	return nil
}

func (f *redisFloorT) get(ctx context.Context, name string) ([][]byte, error) {
	vals, err := f.c.LRange(ctx, f.prefix+":floor:"+name, 0, -1).Result()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}

// close deletes every key of the namespace, the store's with the floor's.
func (f *redisFloorT) close(ctx context.Context) error {
	return f.each(ctx, func(k string) error { return f.c.Del(ctx, k).Err() })
}
