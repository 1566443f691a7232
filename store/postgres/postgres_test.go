package postgres_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
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
	testenv.Examples(envDSN, "DATABASE_URL")
	code := m.Run()
	testenv.ReportSkips("store/postgres")
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
	return testenv.URL(tb, envDSN) // e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable
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
		opts.Namespace = "t_" + testenv.RandHex(6)
	}
	dropSchemaLater(tb, opts.Namespace)
	s, err := postgres.Open(tb.Context(), d, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	dsn(t)
	abilities := storetest.Abilities{Leases: true, Claims: true, Sweep: true, Snapshots: true, Search: true,
		Envelopes: func(t *testing.T, s cairn.Store, id string) [][]byte {
			ps := s.(*postgres.Store)
			rows, err := ps.Pool().Query(t.Context(), "SELECT envelope FROM "+
				pgx.Identifier{ps.Schema(), "events"}.Sanitize()+" WHERE session_id = $1 ORDER BY seq", id)
			if err != nil {
				t.Fatal(err)
			}
			envs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
			if err != nil {
				t.Fatal(err)
			}
			return envs
		},
		DeleteEvent: func(t *testing.T, s cairn.Store, id string, seq int64) {
			q := "DELETE FROM " + pgx.Identifier{s.(*postgres.Store).Schema(), "events"}.Sanitize() + " WHERE session_id = $1 AND seq = $2"
			tag, err := adminPool(t).Exec(t.Context(), q, id, seq)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("delete the event of seq %d: %v, %d deleted", seq, err, tag.RowsAffected())
			}
		}}
	storetest.Run(t, abilities, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		return open(t, opts)
	})
}

func BenchmarkAppend(b *testing.B) {
	storetest.BenchmarkAppend(b, func(b *testing.B, opts cairn.StoreOptions) cairn.Store {
		return open(b, opts)
	})
}

// BenchmarkAppendVsFloor compares an Append with the cheapest durable write
// PostgreSQL offers, one autocommit INSERT of a 1 KB row, on the same server
// in the same run. Each iteration does one of each, back to back, so both
// see the same load on a shared machine; it reports their medians and the
// ratio of the two ("x-floor"). The session already holds 10,000 events.
func BenchmarkAppendVsFloor(b *testing.B) {
	s := open(b, cairn.StoreOptions{})
	table := pgx.Identifier{s.Schema(), "floor"}.Sanitize()
	if _, err := s.Pool().Exec(b.Context(), "CREATE TABLE "+table+" (id bigint PRIMARY KEY, body bytea NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	const id = "bench"
	if err := s.Create(b.Context(), cairn.SessionMeta{ID: id}); err != nil {
		b.Fatal(err)
	}
	last := storetest.Prefill(b, s, id, 10000)
	body := make([]byte, 1024)
	q := "INSERT INTO " + table + " (id, body) VALUES ($1, $2)"
	var floor, app []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := s.Pool().Exec(b.Context(), q, last, body); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := s.Append(b.Context(), id, last, storetest.Padded(last+1, 1024)); err != nil {
			b.Fatal(err)
		}
		floor, app = append(floor, t1.Sub(t0)), append(app, time.Since(t1))
		last++
	}
	b.StopTimer()
	f, a := median(floor), median(app)
	b.ReportMetric(float64(f.Nanoseconds())/1e3, "floor-p50-µs")
	b.ReportMetric(float64(a.Nanoseconds())/1e3, "append-p50-µs")
	b.ReportMetric(float64(a)/float64(f), "x-floor")
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
