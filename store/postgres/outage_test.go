package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestOpen_NothingListens(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://postgres@"+testenv.FreeAddr(t)+"/test?sslmode=disable", cairn.StoreOptions{})
	fault.WantOutage(t, "Open of a port where nothing listens", err)
}

// TestStore_OutageCut cuts the network between the store and the server:
// every call fails as an outage, and once the network is back the same
// append goes through once (or is found already done).
func TestStore_OutageCut(t *testing.T) {
	s, p, _ := proxiedStore(t)
	fault.CheckCut(t, s, p, 5*time.Second)
}

// TestStore_OutageStall holds every byte between the store and the
// server: each call returns with its context, as an outage.
func TestStore_OutageStall(t *testing.T) {
	s, p, _ := proxiedStore(t)
	fault.CheckStall(t, s, p)
}

// proxiedStore opens a store of a new namespace, ns, on the test server
// through a fault proxy.
func proxiedStore(t *testing.T) (s *postgres.Store, p *fault.Proxy, ns string) {
	t.Helper()
	p = fault.StartProxy(t, dsn(t))
	ns = "t_" + testenv.RandHex(6)
	dropSchemaLater(t, ns)
	s, err := postgres.Open(t.Context(), p.URL(dsn(t)), cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, p, ns
}

// TestStore_OutageTerminated terminates the store's connection on the
// server (pg_terminate_backend, as an administrator or a failover does):
// the next call fails as an outage (57P01 or a closed connection), the one
// after goes on with a new connection.
func TestStore_OutageTerminated(t *testing.T) {
	app := "cairn_t_" + testenv.RandHex(6)
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false } // meet the dead connection
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ns := "t_" + testenv.RandHex(6)
	dropSchemaLater(t, ns)
	s, err := postgres.New(t.Context(), pool, cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "term"}); err != nil {
		t.Fatal(err)
	}
	terminate := func() {
		t.Helper()
		var n int
		err := adminPool(t).QueryRow(t.Context(),
			"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n)
		if err != nil || n != 1 {
			t.Fatalf("terminate the store's connection: %d terminated, %v", n, err)
		}
	}
	terminate()
	err = s.Append(t.Context(), "term", 0, storetest.Custom(1, "a"))
	fault.WantOutage(t, "Append on a terminated connection", err)
	if err := s.Append(t.Context(), "term", 0, storetest.Custom(1, "a")); err != nil {
		t.Fatalf("Append again, on a new connection: %v", err)
	}
	terminate()
	_, err = s.Load(t.Context(), "term", 0)
	fault.WantOutage(t, "Load on a terminated connection", err)
	if rec, err := s.Load(t.Context(), "term", 0); err != nil || len(rec.Events) != 1 {
		t.Fatalf("Load again: %v, want the 1 event", err)
	}
}

// TestStore_NotOutages provokes answers of the server that are not
// outages: a missing privilege, a missing table, a constraint the store
// does not know. None may read as an outage.
func TestStore_NotOutages(t *testing.T) {
	t.Run("insufficient privilege", func(t *testing.T) {
		role := "cairn_t_" + testenv.RandHex(6)
		admin := adminPool(t)
		if _, err := admin.Exec(t.Context(), "CREATE ROLE "+role+" LOGIN"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) })
		cfg, err := pgx.ParseConfig(dsn(t))
		if err != nil {
			t.Fatal(err)
		}
		ns := "t_" + testenv.RandHex(6)
		dropSchemaLater(t, ns)
		_, err = postgres.Open(t.Context(), fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", role, cfg.Host, cfg.Port, cfg.Database),
			cairn.StoreOptions{Namespace: ns})
		fault.WantAnswer(t, "Open by a role that may not create the schema", err)
		if err == nil || !strings.Contains(err.Error(), "42501") {
			t.Errorf("Open by a role without privileges: %v, want SQLSTATE 42501", err)
		}
	})
	t.Run("no such database or role", func(t *testing.T) {
		cfg, err := pgx.ParseConfig(dsn(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{
			fmt.Sprintf("postgres://%s@%s:%d/cairn_no_such_db_%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, testenv.RandHex(6)),
			fmt.Sprintf("postgres://cairn_no_such_role_%s@%s:%d/%s?sslmode=disable", testenv.RandHex(6), cfg.Host, cfg.Port, cfg.Database),
		} {
			_, err := postgres.Open(t.Context(), u, cairn.StoreOptions{})
			fault.WantAnswer(t, "Open of "+u, err)
		}
	})
	t.Run("undefined table", func(t *testing.T) {
		s := open(t, cairn.StoreOptions{})
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
			t.Fatal(err)
		}
		if _, err := adminPool(t).Exec(t.Context(), "DROP TABLE "+pgx.Identifier{s.Schema(), "events"}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		appendErr, loadErr := fault.AppendLoad(t, s, "x", 0, time.Minute)
		fault.WantAnswer(t, "Append without an events table", appendErr)
		fault.WantAnswer(t, "Load without an events table", loadErr)
	})
	t.Run("check violation", func(t *testing.T) {
		s := open(t, cairn.StoreOptions{})
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
			t.Fatal(err)
		}
		table := pgx.Identifier{s.Schema(), "events"}.Sanitize()
		if _, err := adminPool(t).Exec(t.Context(), "ALTER TABLE "+table+" ADD CONSTRAINT small CHECK (length(envelope) < 10)"); err != nil {
			t.Fatal(err)
		}
		err := s.Append(t.Context(), "x", 0, storetest.Custom(1, "too long for the constraint"))
		fault.WantAnswer(t, "Append refused by a CHECK constraint", err)
		if errors.Is(err, cairn.ErrConflict) || errors.Is(err, cairn.ErrNotFound) {
			t.Errorf("Append refused by a CHECK constraint: %v, want the server's error, not a contract error", err)
		}
	})
}

// TestTranslate_Codes classifies the server's errors by SQLSTATE, for the
// codes a test cannot provoke on a shared server (a full disk, a crash, a
// server starting up).
func TestTranslate_Codes(t *testing.T) {
	pg := func(code string) error { return &pgconn.PgError{Severity: "FATAL", Code: code, Message: "x"} }
	for _, c := range []struct {
		err    error
		outage bool
	}{
		{pg("57P01"), true},  // admin_shutdown
		{pg("57P02"), true},  // crash_shutdown
		{pg("57P03"), true},  // cannot_connect_now
		{pg("08006"), true},  // connection_failure
		{pg("08001"), true},  // sqlclient_unable_to_establish_sqlconnection
		{pg("53300"), true},  // too_many_connections
		{pg("53100"), false}, // disk_full
		{pg("42501"), false}, // insufficient_privilege
		{pg("42P01"), false}, // undefined_table
		{pg("3F000"), false}, // invalid_schema_name
		{pg("23514"), false}, // check_violation
		{pg("XX001"), false}, // data_corrupted
		{pg("28P01"), false}, // invalid_password
	} {
		if got := cairn.IsUnavailable(postgres.Translate(c.err)); got != c.outage {
			t.Errorf("IsUnavailable(%v) = %v, want %v", c.err, got, c.outage)
		}
	}
}

// TestStore_TakeoverBeforeCreate: a takeover of a session that does not
// exist matches no row, and before it reads why, the session is created
// and its lease taken. The takeover was asked of a missing session: it
// answers ErrNotFound (it takes effect before the Create), never "held",
// which a takeover never is.
func TestStore_TakeoverBeforeCreate(t *testing.T) {
	s, p, ns := proxiedStore(t)
	direct := open(t, cairn.StoreOptions{Namespace: ns})
	ctx := t.Context()
	// Warm the connection up: pgx prepares a statement the first time a
	// connection runs it, and that round trip's reply must not be the one
	// the proxy holds. A takeover, and one of a missing session.
	if err := s.Create(ctx, cairn.SessionMeta{ID: "warm"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Takeover(ctx, "warm", "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Takeover(ctx, "nowhere", "w", time.Minute); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("Takeover of a missing session: %v, want ErrNotFound", err)
	}
	p.StallReplies()
	done := make(chan error, 1)
	go func() {
		done <- testenv.Bounded(t, 20*time.Second, "Takeover", func(ctx context.Context) error {
			_, err := s.Takeover(ctx, "late", "taker", time.Minute)
			return err
		})
	}()
	fault.Until(t, 10*time.Second, "the UPDATE's reply", func() (bool, error) { return p.Held() > 0, nil })
	if err := direct.Create(ctx, cairn.SessionMeta{ID: "late"}); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Acquire(ctx, "late", "other", time.Minute); err != nil {
		t.Fatal(err)
	}
	p.Release()
	if err := <-done; !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Takeover of a session created while it ran: got %v, want ErrNotFound", err)
	}
}
