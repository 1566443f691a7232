package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/storetest"
)

// countRows counts the rows of a session in a table of a store's schema.
func countRows(t *testing.T, s *postgres.Store, table, column, id string) int {
	t.Helper()
	q := "SELECT count(*) FROM " + pgx.Identifier{s.Schema(), table}.Sanitize() + " WHERE " + column + " = $1"
	var n int
	if err := adminPool(t).QueryRow(t.Context(), q, id).Scan(&n); err != nil {
		t.Fatalf("count %s rows: %v", table, err)
	}
	return n
}

func TestStore_Delete(t *testing.T) {
	s := open(t, cairn.StoreOptions{})
	for _, id := range []string{"gone", "kept"} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(t.Context(), id, 0, storetest.Conversation(0, "r1", "hi")...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(t.Context(), "gone"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n := countRows(t, s, "sessions", "id", "gone"); n != 0 {
		t.Errorf("sessions rows of a deleted session = %d, want 0", n)
	}
	if n := countRows(t, s, "events", "session_id", "gone"); n != 0 {
		t.Errorf("events rows of a deleted session = %d, want 0", n)
	}
	if n := countRows(t, s, "events", "session_id", "kept"); n != 16 {
		t.Errorf("events rows of the other session = %d, want 16", n)
	}
	err := s.Append(t.Context(), "gone", 16, storetest.Custom(17, "late"))
	if !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Append after Delete: got %v, want ErrNotFound", err)
	}
	if n := countRows(t, s, "events", "session_id", "gone"); n != 0 {
		t.Errorf("events rows after a late Append = %d, want 0", n)
	}
}

func TestStore_Sweep(t *testing.T) {
	clock := storetest.NewClock()
	s := open(t, cairn.StoreOptions{TTL: time.Hour, Now: clock.Now})
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(t.Context(), id, 0, storetest.UserTurn(0, "r", id)...); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(30 * time.Minute)
	if err := s.Append(t.Context(), "c", 4, storetest.Custom(5, "refresh")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(45 * time.Minute)
	n, err := s.Sweep(t.Context())
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if n != 2 {
		t.Errorf("Sweep deleted %d sessions, want 2", n)
	}
	for id, want := range map[string]int{"a": 0, "b": 0, "c": 5} {
		if got := countRows(t, s, "events", "session_id", id); got != want {
			t.Errorf("session %s has %d event rows after Sweep, want %d", id, got, want)
		}
	}
	if n, err := s.Sweep(t.Context()); err != nil || n != 0 {
		t.Errorf("second Sweep = %d, %v; want 0, nil", n, err)
	}
}

// migrationCount is the number of migration files the package embeds.
func migrationCount(t *testing.T) int {
	t.Helper()
	files, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}

type applied struct {
	Version int
	Name    string
	At      time.Time
}

func readMigrations(t *testing.T, schema string) []applied {
	t.Helper()
	rows, err := adminPool(t).Query(t.Context(), "SELECT version, name, applied_at FROM "+
		pgx.Identifier{schema, "schema_migrations"}.Sanitize()+" ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[applied])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestOpen_Migrations(t *testing.T) {
	ns := "mig_" + testenv.RandHex(6)
	first := open(t, cairn.StoreOptions{Namespace: ns})
	want := migrationCount(t)
	before := readMigrations(t, first.Schema())
	if len(before) != want {
		t.Fatalf("schema_migrations has %d rows, want one per migration file (%d)", len(before), want)
	}
	for i, m := range before {
		if m.Version != i+1 {
			t.Errorf("migration row %d has version %d, want %d", i, m.Version, i+1)
		}
	}
	first.Close()
	for range 2 {
		s := open(t, cairn.StoreOptions{Namespace: ns})
		if after := readMigrations(t, s.Schema()); !slices.Equal(after, before) {
			t.Errorf("after reopen schema_migrations = %v, want it unchanged: %v", after, before)
		}
	}
}

func TestOpen_ConcurrentNewNamespace(t *testing.T) {
	d := dsn(t)
	ns := "race_" + testenv.RandHex(6)
	dropSchemaLater(t, ns)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	stores := make([]*postgres.Store, 4)
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = postgres.Open(t.Context(), d, cairn.StoreOptions{Namespace: ns}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d of 4 at once: %v", i, err)
			continue
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	if t.Failed() {
		return
	}
	if got, want := len(readMigrations(t, postgres.Schema(ns))), migrationCount(t); got != want {
		t.Errorf("schema_migrations has %d rows after 4 concurrent opens, want %d", got, want)
	}
	// Every store works on the same tables.
	if err := stores[0].Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		if _, err := s.Load(t.Context(), "x", 0); err != nil {
			t.Errorf("store %d: Load: %v", i, err)
		}
	}
}

func TestOpen_NewerSchema(t *testing.T) {
	s := open(t, cairn.StoreOptions{})
	ns := strings.TrimPrefix(s.Schema(), "cairn_")
	s.Close()
	_, err := adminPool(t).Exec(t.Context(), "INSERT INTO "+pgx.Identifier{s.Schema(), "schema_migrations"}.Sanitize()+
		" (version, name) VALUES (9999, '9999_from_the_future')")
	if err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(t.Context(), dsn(t), cairn.StoreOptions{Namespace: ns})
	if !errors.Is(err, cairn.ErrSchemaTooNew) {
		t.Fatalf("Open of a schema at version 9999: got %v, want ErrSchemaTooNew", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "9999") || !strings.Contains(msg, s.Schema()) {
		t.Errorf("error %q does not name the version 9999 and the schema %s", msg, s.Schema())
	}
}

// TestStore_TwoPools races two stores with pools of their own, as two
// machines would be, on one session: each round exactly one append wins.
func TestStore_TwoPools(t *testing.T) {
	const rounds, perStore = 10, 3
	a := open(t, cairn.StoreOptions{})
	b := open(t, cairn.StoreOptions{Namespace: strings.TrimPrefix(a.Schema(), "cairn_")})
	if a.Pool() == b.Pool() {
		t.Fatal("the two stores share a pool")
	}
	const id = "contended"
	if err := a.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	stores := []*postgres.Store{a, b}
	var winners []string
	for round := range rounds {
		expect := int64(round)
		won, errs := storetest.Race(len(stores)*perStore, cairn.ErrConflict, func(w int) (string, error) {
			i := w / perStore
			tag := fmt.Sprintf("r%d-s%d-w%d", round, i, w%perStore)
			return tag, stores[i].Append(t.Context(), id, expect, storetest.Custom(expect+1, tag))
		})
		if len(errs) > 0 {
			t.Fatalf("round %d: errors other than ErrConflict: %v", round, errs)
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d appends won (%v), want exactly 1", round, len(won), won)
		}
		winners = append(winners, won[0])
	}
	rec, err := b.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != rounds || rec.Info.LastSeq != rounds {
		t.Fatalf("history has %d events, last seq %d; want %d and %d", len(rec.Events), rec.Info.LastSeq, rounds, rounds)
	}
	for i, e := range rec.Events {
		var c cairn.Custom
		var tag string
		if err := json.Unmarshal(e.Data, &c); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(c.Payload, &tag); err != nil {
			t.Fatal(err)
		}
		if e.Seq != int64(i+1) || tag != winners[i] {
			t.Errorf("event %d: seq %d by %s, want seq %d by the round's winner %s", i, e.Seq, tag, i+1, winners[i])
		}
	}
}

func TestOpen_Unreachable(t *testing.T) {
	const password = "s3cret-pw"
	url := "postgres://cairn:" + password + "@127.0.0.1:1/test?sslmode=disable&connect_timeout=5"
	s, err := postgres.Open(t.Context(), url, cairn.StoreOptions{})
	if err == nil {
		s.Close()
		t.Fatal("Open of a closed port succeeded")
	}
	msg := err.Error()
	t.Logf("Open of an unreachable server: %v", msg)
	if !strings.Contains(msg, "127.0.0.1:1") {
		t.Errorf("error %q does not name the address 127.0.0.1:1", msg)
	}
	if strings.Contains(msg, password) {
		t.Errorf("error %q shows the password", msg)
	}
	// The same through the URL registry.
	_, err = cairn.Open(t.Context(), url, cairn.StoreOptions{})
	if err == nil || strings.Contains(err.Error(), password) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("cairn.Open error = %v, want one naming 127.0.0.1:1 without the password", err)
	}
}

func TestRegister(t *testing.T) {
	d := dsn(t)
	ns := "reg_" + testenv.RandHex(6)
	dropSchemaLater(t, ns)
	for _, scheme := range []string{"postgres", "postgresql"} {
		_, rest, ok := strings.Cut(d, "://")
		if !ok {
			t.Skipf("%s is not a URL, so its scheme cannot be swapped", envDSN)
		}
		s, err := cairn.Open(t.Context(), scheme+"://"+rest, cairn.StoreOptions{Namespace: ns})
		if err != nil {
			t.Fatalf("cairn.Open with scheme %s: %v", scheme, err)
		}
		if _, ok := s.(*postgres.Store); !ok {
			t.Errorf("scheme %s opened a %T, want *postgres.Store", scheme, s)
		}
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: scheme}); err != nil {
			t.Errorf("Create through %s: %v", scheme, err)
		}
		s.Close()
	}
}

func TestNew_CallerKeepsPool(t *testing.T) {
	pool, err := pgxpool.New(t.Context(), dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ns := "pool_" + testenv.RandHex(6)
	dropSchemaLater(t, ns)
	s, err := postgres.New(t.Context(), pool, cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(t.Context()); err != nil {
		t.Errorf("the caller's pool after Close: %v, want it still open", err)
	}
	if _, err := s.List(t.Context(), cairn.ListOptions{}); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("List after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.Sweep(t.Context()); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("Sweep after Close: got %v, want ErrClosed", err)
	}
}

func TestSchema(t *testing.T) {
	if got := postgres.Schema("agent_sessions"); got != "cairn_agent_sessions" {
		t.Errorf("Schema(agent_sessions) = %q, want cairn_agent_sessions", got)
	}
	long1 := strings.Repeat("a", 127) + "1"
	long2 := strings.Repeat("a", 127) + "2"
	s1, s2 := postgres.Schema(long1), postgres.Schema(long2)
	if s1 == s2 {
		t.Errorf("two long namespaces share schema %q", s1)
	}
	for _, s := range []string{s1, s2, postgres.Schema(strings.Repeat("z", 57))} {
		if len(s) > 63 {
			t.Errorf("schema %q is %d bytes, PostgreSQL keeps 63", s, len(s))
		}
	}
}

func TestStore_LongNamespaces(t *testing.T) {
	tail := testenv.RandHex(6)
	nsA := strings.Repeat("N", 128-len(tail)-1) + "a" + tail
	nsB := strings.Repeat("N", 128-len(tail)-1) + "b" + tail
	a := open(t, cairn.StoreOptions{Namespace: nsA})
	b := open(t, cairn.StoreOptions{Namespace: nsB})
	if err := a.Create(t.Context(), cairn.SessionMeta{ID: "only-in-a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(t.Context(), "only-in-a", 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("b loads a's session: got %v, want ErrNotFound", err)
	}
}

// TestStore_EnvelopeBytes checks that an event comes back as the same JSON:
// its data byte for byte, keys in their order, HTML characters unescaped.
func TestStore_EnvelopeBytes(t *testing.T) {
	s := open(t, cairn.StoreOptions{})
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	e := storetest.Custom(1, "x")
	e.Data = json.RawMessage(`{"type":"test.order","payload":{"z":1,"a":"<b>&</b>","n":1.50,"u":"\u00e9 ✓"}}`)
	e.At = time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.UTC)
	if err := s.Append(t.Context(), "x", 0, e); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Load(t.Context(), "x", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := rec.Events[0]
	if !bytes.Equal(got.Data, e.Data) {
		t.Errorf("data after reload:\n got %s\nwant %s", got.Data, e.Data)
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(e)
	if !bytes.Equal(gj, wj) {
		t.Errorf("envelope after reload:\n got %s\nwant %s", gj, wj)
	}
}

// TestStore_AppendUniqueBackstop plants a stray event row where the next
// append will write, so that the expected-seq check passes but the primary
// key on (session_id, seq) refuses: the append must fail with ErrConflict
// and leave the session row as it was.
func TestStore_AppendUniqueBackstop(t *testing.T) {
	s := open(t, cairn.StoreOptions{})
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	_, err := adminPool(t).Exec(t.Context(), "INSERT INTO "+pgx.Identifier{s.Schema(), "events"}.Sanitize()+
		" (session_id, seq, envelope) VALUES ('x', 2, '\\x7b7d')")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Append(t.Context(), "x", 0, storetest.Custom(1, "a"), storetest.Custom(2, "b"))
	if !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("Append onto a stray row: got %v, want ErrConflict", err)
	}
	rec, err := s.Load(t.Context(), "x", 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Info.LastSeq != 0 || !rec.Info.UpdatedAt.Equal(rec.Info.CreatedAt) {
		t.Errorf("a refused append changed the session: last seq %d, updated %v (created %v)", rec.Info.LastSeq, rec.Info.UpdatedAt, rec.Info.CreatedAt)
	}
	if n := countRows(t, s, "events", "session_id", "x"); n != 1 {
		t.Errorf("events rows = %d, want only the stray one", n)
	}
}

// TestOpen_PoolSize checks that a store made by Open keeps up to
// DefaultPoolSize connections (or the machine's CPUs, if more) unless its
// URL or DSN sets pool_max_conns, which it then keeps as given, small or
// large.
func TestOpen_PoolSize(t *testing.T) {
	base := dsn(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	kv := fmt.Sprintf("host=%s port=%s user=%s dbname=%s", u.Hostname(), u.Port(), u.User.Username(), strings.TrimPrefix(u.Path, "/"))
	if pw, ok := u.User.Password(); ok {
		kv += " password=" + pw
	}
	if mode := u.Query().Get("sslmode"); mode != "" {
		kv += " sslmode=" + mode
	}
	for _, c := range []struct {
		name, dsn string
		want      int32
	}{
		{"URL", base, int32(max(postgres.DefaultPoolSize, runtime.NumCPU()))},
		{"URL with pool_max_conns=2", base + "&pool_max_conns=2", 2},
		{"URL with pool_max_conns=20", base + "&pool_max_conns=20", 20},
		{"DSN", kv, int32(max(postgres.DefaultPoolSize, runtime.NumCPU()))},
		{"DSN with pool_max_conns=3", kv + " pool_max_conns=3", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := "pool_" + testenv.RandHex(6)
			dropSchemaLater(t, ns)
			s, err := postgres.Open(t.Context(), c.dsn, cairn.StoreOptions{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.Pool().Config().MaxConns; got != c.want {
				t.Errorf("MaxConns = %d, want %d", got, c.want)
			}
		})
	}
}

// afterAppend is a pgx tracer that runs then once, after the first append
// statement (its reply read) once armed, before the store does anything
// else: the moment another client's writes land between the statement and
// the store's next read.
type afterAppend struct {
	armed atomic.Bool
	then  func()
}

func (a *afterAppend) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (a *afterAppend) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if strings.Contains(d.CommandTag.String(), "SELECT") && a.armed.CompareAndSwap(true, false) {
		a.then()
	}
}

// TestStore_RetryAcrossRecreate: an append sent again after its reply was
// lost finds, in its statement's snapshot, the session past the expected
// seq holding its events: it is done. When the session is then deleted and
// created again before the store looks further, the answer must still be
// the snapshot's (done), not one made of the new session's seq: a conflict
// at seq 0 for an append at seq 0 is no state the session was ever in.
func TestStore_RetryAcrossRecreate(t *testing.T) {
	ns := "t_" + testenv.RandHex(6)
	other := open(t, cairn.StoreOptions{Namespace: ns})
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	tr := &afterAppend{then: func() {
		if err := other.Delete(context.Background(), "a"); err != nil {
			t.Errorf("Delete between the append's statement and its next read: %v", err)
		}
		if err := other.Create(context.Background(), cairn.SessionMeta{ID: "a"}); err != nil {
			t.Errorf("Create between the append's statement and its next read: %v", err)
		}
	}}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := postgres.New(t.Context(), pool, cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	var lease cairn.Lease
	for _, c := range []struct {
		name   string
		append func(expect int64, evs ...cairn.Event) error
	}{
		{"Append", func(expect int64, evs ...cairn.Event) error { return s.Append(t.Context(), "a", expect, evs...) }},
		{"AppendFenced", func(expect int64, evs ...cairn.Event) error {
			if lease.Token == 0 {
				var err error
				if lease, err = s.Acquire(t.Context(), "a", "h", time.Minute); err != nil {
					return err
				}
			}
			return s.AppendFenced(t.Context(), "a", lease, expect, evs...)
		}},
	} {
		for _, n := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%d", c.name, n), func(t *testing.T) {
				_ = other.Delete(t.Context(), "a")
				if err := other.Create(t.Context(), cairn.SessionMeta{ID: "a"}); err != nil {
					t.Fatal(err)
				}
				lease = cairn.Lease{}
				var evs []cairn.Event
				for i := range n {
					evs = append(evs, storetest.Custom(int64(i+1), "retried"))
				}
				if err := c.append(0, evs...); err != nil {
					t.Fatalf("first send: %v", err)
				}
				tr.armed.Store(true)
				if err := c.append(0, evs...); err != nil {
					t.Fatalf("the send again, with the session deleted and created after its statement: %v; want nil (its snapshot held its events)", err)
				}
				if tr.armed.Load() {
					t.Fatal("the tracer never ran: the test did not make the race")
				}
			})
		}
	}
}
