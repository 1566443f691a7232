package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/storetest"
)

// envDSN names the environment variable that points the tests at a
// PostgreSQL server, such as
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const envDSN = "CAIRN_TEST_POSTGRES"

var (
	adminOnce sync.Once
	admin     *pgxpool.Pool
	adminErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if admin != nil {
		admin.Close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// dsn returns the test server's DSN, or skips the test when none is set.
func dsn(tb testing.TB) string {
	tb.Helper()
	d := os.Getenv(envDSN)
	if d == "" {
		tb.Skipf("%s is not set; set it to a PostgreSQL URL such as postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run this test", envDSN)
	}
	return d
}

// adminPool is a pool of the test package's own, for looking at tables
// directly and dropping the schemas tests made.
func adminPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	d := dsn(tb)
	adminOnce.Do(func() { admin, adminErr = pgxpool.New(context.Background(), d) })
	if adminErr != nil {
		tb.Fatal(adminErr)
	}
	return admin
}

// dropSchemaLater drops a namespace's schema when the test ends, whether or
// not it was created, so the test database does not fill up.
func dropSchemaLater(tb testing.TB, namespace string) {
	tb.Helper()
	pool := adminPool(tb)
	tb.Cleanup(func() {
		q := "DROP SCHEMA IF EXISTS " + pgx.Identifier{postgres.Schema(namespace)}.Sanitize() + " CASCADE"
		if _, err := pool.Exec(context.Background(), q); err != nil {
			tb.Errorf("drop schema of namespace %s: %v", namespace, err)
		}
	})
}

// open opens a store on the test server and closes it when the test ends.
func open(tb testing.TB, opts cairn.StoreOptions) *postgres.Store {
	tb.Helper()
	d := dsn(tb)
	if opts.Namespace == "" {
		opts.Namespace = "t_" + randHex(tb)
	}
	dropSchemaLater(tb, opts.Namespace)
	s, err := postgres.Open(tb.Context(), d, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func randHex(tb testing.TB) string {
	tb.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

func TestConformance(t *testing.T) {
	dsn(t)
	storetest.Run(t, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		return open(t, opts)
	})
}

func BenchmarkAppend(b *testing.B) {
	storetest.BenchmarkAppend(b, func(b *testing.B, opts cairn.StoreOptions) cairn.Store {
		return open(b, opts)
	})
}

// BenchmarkInsertFloor measures what BenchmarkAppend is compared with: one
// autocommit INSERT of a 1 KB row on one connection, the cheapest durable
// write PostgreSQL offers, on the same server in the same run.
func BenchmarkInsertFloor(b *testing.B) {
	s := open(b, cairn.StoreOptions{})
	table := pgx.Identifier{s.Schema(), "floor"}.Sanitize()
	if _, err := s.Pool().Exec(b.Context(), "CREATE TABLE "+table+" (id bigint PRIMARY KEY, body bytea NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	conn, err := s.Pool().Acquire(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	body := make([]byte, 1024)
	q := "INSERT INTO " + table + " (id, body) VALUES ($1, $2)"
	durs := make([]time.Duration, 0, b.N)
	var id int64
	for b.Loop() {
		id++
		t0 := time.Now()
		if _, err := conn.Exec(b.Context(), q, id, body); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	storetest.ReportPercentiles(b, durs)
}
