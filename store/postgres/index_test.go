package postgres_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/storetest"
)

// fillSQL adds $1 sessions with four events each, in one statement per
// table: a first message of 400 bytes (a table of some megabytes, where
// reading it all costs the planner more than an index), statuses mostly completed (one in 10,000 awaiting approval),
// labels env (two values) and team (1,000 values); the first $2 have
// expired at $3.
const fillSQL = `INSERT INTO %[1]s.sessions (id, created_at, updated_at, expires_at, status, steps, first_message, labels, last_seq)
	SELECT 's-' || lpad(i::text, 6, '0'), t, t, CASE WHEN i < $2 THEN $3::timestamptz END,
		CASE WHEN i %% 10000 = 7 THEN 'awaiting_approval' WHEN i %% 10 = 9 THEN 'failed' ELSE 'completed' END, 2, repeat('q', 400),
		jsonb_build_object('env', CASE WHEN i %% 2 = 0 THEN 'prod' ELSE 'dev' END, 'team', 't' || (i %% 1000)), 4
	FROM generate_series(0, $1::int - 1) AS i, LATERAL (SELECT timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second' AS t) AS x;
INSERT INTO %[1]s.events (session_id, seq, envelope)
	SELECT id, seq, convert_to('{"v":1,"seq":' || seq || '}', 'UTF8') FROM %[1]s.sessions, generate_series(1, 4) AS seq;
ANALYZE %[1]s.sessions;
ANALYZE %[1]s.session_labels`

func fill(t *testing.T, s *postgres.Store, n, expired int, at time.Time) {
	t.Helper()
	q := strings.ReplaceAll(fillSQL, "%[1]s", pgx.Identifier{s.Schema()}.Sanitize())
	q = strings.ReplaceAll(q, "%%", "%")
	for _, stmt := range strings.Split(q, ";\n") {
		var args []any
		if strings.Contains(stmt, "$3") {
			args = []any{n, expired, at}
		}
		if _, err := s.Pool().Exec(t.Context(), stmt, args...); err != nil {
			t.Fatalf("fill: %v", err)
		}
	}
}

// explain returns PostgreSQL's plan for query, one line per step.
func explain(t *testing.T, s *postgres.Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.Pool().Query(t.Context(), "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", query, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestList_IndexPlans: on a table of 20,000 sessions with its statistics
// (enough for the planner to weigh an index against reading the table;
// enable_seqscan stays on), a List by prefix, status or label and the
// lookups by ID read through an index, never a sequential scan of the
// sessions. A List by one label walks the label's range of
// session_labels_order_idx in List order: no sort of its sessions.
func TestList_IndexPlans(t *testing.T) {
	s := open(t, cairn.StoreOptions{})
	fill(t, s, 20000, 0, time.Time{})
	sessions := pgx.Identifier{s.Schema(), "sessions"}.Sanitize()
	cases := []struct {
		name string
		opts cairn.ListOptions
	}{
		{"prefix", cairn.ListOptions{Prefix: "s-0123"}},
		{"missing prefix", cairn.ListOptions{Prefix: "zz"}},
		{"rare status", cairn.ListOptions{Status: []cairn.Status{cairn.StatusAwaiting}}},
		{"missing status", cairn.ListOptions{Status: []cairn.Status{cairn.StatusRunning}}},
		{"statuses", cairn.ListOptions{Status: []cairn.Status{cairn.StatusCompleted, cairn.StatusFailed, cairn.StatusAwaiting}}},
		{"label", cairn.ListOptions{Labels: map[string]string{"team": "t7"}}},
		{"missing label", cairn.ListOptions{Labels: map[string]string{"team": "none"}}},
		{"status and label", cairn.ListOptions{Status: []cairn.Status{cairn.StatusFailed}, Labels: map[string]string{"team": "t9"}}},
		{"common label", cairn.ListOptions{Labels: map[string]string{"env": "prod"}}},
		{"labels, statuses, a window, a cursor", cairn.ListOptions{Labels: map[string]string{"env": "prod", "team": "t8"},
			Status:       []cairn.Status{cairn.StatusFailed, cairn.StatusCompleted},
			UpdatedAfter: time.Unix(1, 0), UpdatedBefore: time.Now(),
			Cursor: driver.Cursor{UpdatedAt: time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC), ID: "s-010800"}.Encode()}},
	}
	for _, c := range cases {
		q, args, err := s.ListQuery(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		plan := explain(t, s, q, args...)
		if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "Index") {
			t.Errorf("%s: the plan reads the table, not an index:\n%s", c.name, plan)
		}
		if len(c.opts.Labels) == 1 && (!strings.Contains(plan, "session_labels_order_idx") || strings.Contains(plan, "Sort")) {
			t.Errorf("%s: the plan does not walk the label in List order:\n%s", c.name, plan)
		}
	}
	for name, q := range map[string]string{
		"missing ID":    "SELECT * FROM " + sessions + " WHERE id = 'no-such-session'",
		"leases":        "SELECT * FROM " + sessions + " WHERE id = ANY('{s-000001,s-000002}'::text[]) AND lease_holder <> ''",
		"count expired": "SELECT count(*) FROM " + sessions + " WHERE expires_at IS NOT NULL AND expires_at <= now()",
	} {
		if plan := explain(t, s, q); strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: the plan reads the table, not an index:\n%s", name, plan)
		}
	}
	// The pages are List's all the same.
	p, err := s.List(t.Context(), cairn.ListOptions{Status: []cairn.Status{cairn.StatusAwaiting, cairn.StatusFailed}, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range p.Sessions {
		got = append(got, i.ID+":"+string(i.Status))
	}
	if want := []string{"s-019999:failed", "s-019989:failed", "s-019979:failed"}; !slices.Equal(got, want) {
		t.Errorf("List(awaiting, failed) = %v, want %v", got, want)
	}
}

// TestMigrate_Labels: a namespace at schema version 2 or 3 holding
// labelled sessions migrates, and its labels filter List afterwards, in
// List order; an append to a migrated session moves it to the top of its
// label's List.
func TestMigrate_Labels(t *testing.T) {
	files := []string{"0001_init.sql", "0002_leases.sql", "0003_indexes.sql"}
	for _, from := range []int{2, 3} {
		t.Run(files[from-1], func(t *testing.T) { testMigrateLabels(t, files[:from]) })
	}
}

func testMigrateLabels(t *testing.T, files []string) {
	ns := "t_migrate_labels_" + strconv.Itoa(len(files))
	dropSchemaLater(t, ns)
	schema := pgx.Identifier{postgres.Schema(ns)}.Sanitize()
	pool := adminPool(t)
	stmts := []string{"CREATE SCHEMA " + schema, "SET search_path TO " + schema,
		"CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"}
	for _, f := range files {
		b, err := os.ReadFile("migrations/" + f)
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b), "INSERT INTO schema_migrations (version, name) VALUES ("+f[3:4]+", '"+f+"')")
	}
	stmts = append(stmts, `INSERT INTO sessions (id, created_at, updated_at, status, labels) VALUES
		('a', now(), now() - interval '3 s', 'new', '{"team":"x","env":"prod"}'),
		('b', now(), now() - interval '2 s', 'new', '{"team":"y"}'),
		('c', now(), now() - interval '1 s', 'new', '{"team":"x"}'),
		('d', now(), now(), 'new', '{}')`)
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, q := range stmts {
		if _, err := conn.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := conn.Exec(t.Context(), "RESET search_path"); err != nil {
		t.Fatal(err)
	}

	s := open(t, cairn.StoreOptions{Namespace: ns})
	if got := readMigrations(t, postgres.Schema(ns)); len(got) != migrationCount(t) {
		t.Fatalf("after Open the schema has %d migrations, want %d", len(got), migrationCount(t))
	}
	list := func(labels map[string]string, want []string) {
		t.Helper()
		p, err := s.List(t.Context(), cairn.ListOptions{Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, i := range p.Sessions {
			got = append(got, i.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("List(%v) = %v, want %v", labels, got, want)
		}
	}
	list(map[string]string{"team": "x"}, []string{"c", "a"})
	list(map[string]string{"team": "x", "env": "prod"}, []string{"a"})
	list(map[string]string{"team": "z"}, nil)
	if err := s.Append(t.Context(), "a", 0, storetest.UserTurn(0, "r", "q")...); err != nil {
		t.Fatal(err)
	}
	list(map[string]string{"team": "x"}, []string{"a", "c"})
	list(map[string]string{"env": "prod", "team": "x"}, []string{"a"})
}

// TestStore_SweepMany: Sweep deletes many expired sessions, more than a
// few batches, with their events, keeps the live ones, and CountExpired
// counts them before and none after.
func TestStore_SweepMany(t *testing.T) {
	clock := storetest.NewClock()
	s := open(t, cairn.StoreOptions{TTL: time.Hour, Now: clock.Now})
	expired := 4*postgres.SweepBatch + 3
	fill(t, s, expired+10, expired, clock.Now().Add(-time.Minute))
	if n, err := s.CountExpired(t.Context()); err != nil || n != expired {
		t.Fatalf("CountExpired = %d, %v; want %d", n, err, expired)
	}
	n, err := s.Sweep(t.Context())
	if err != nil || n != expired {
		t.Fatalf("Sweep = %d, %v; want %d", n, err, expired)
	}
	if n, err := s.CountExpired(t.Context()); err != nil || n != 0 {
		t.Errorf("CountExpired after Sweep = %d, %v; want 0", n, err)
	}
	var sessions, events int
	err = s.Pool().QueryRow(t.Context(), "SELECT (SELECT count(*) FROM "+pgx.Identifier{s.Schema(), "sessions"}.Sanitize()+
		"), (SELECT count(*) FROM "+pgx.Identifier{s.Schema(), "events"}.Sanitize()+")").Scan(&sessions, &events)
	if err != nil || sessions != 10 || events != 40 {
		t.Errorf("after Sweep: %d sessions and %d events (%v), want the 10 live ones and their 40", sessions, events, err)
	}
}

// TestSnapshot_IndexPlans: with 20,000 sessions of 4 events and a
// snapshot each, and one of 2,000 events, a load from a seq reads the
// range of the events' primary key (session_id, seq) from that seq (the
// planner may sort those few rows); the snapshot calls read the session
// and its snapshot by their keys. None reads a table through.
func TestSnapshot_IndexPlans(t *testing.T) {
	s := open(t, cairn.StoreOptions{})
	fill(t, s, 20000, 0, time.Time{})
	const id = "long"
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	evs := make([]cairn.Event, 0, 1000)
	for last := int64(0); last < 2000; last += int64(len(evs)) {
		evs = evs[:0]
		for i := range 1000 {
			evs = append(evs, storetest.Custom(last+int64(i)+1, "x"))
		}
		if err := s.Append(t.Context(), id, last, evs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutSnapshot(t.Context(), id, cairn.Snapshot{Seq: 1990, Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	// Every session has a snapshot, so that the planner weighs reading
	// the table against its key.
	if _, err := s.Pool().Exec(t.Context(), "INSERT INTO "+pgx.Identifier{s.Schema(), "snapshots"}.Sanitize()+
		" (session_id, seq, data) SELECT id, 4, convert_to(repeat('s', 200), 'UTF8') FROM "+
		pgx.Identifier{s.Schema(), "sessions"}.Sanitize()+" WHERE id <> $1", id); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"events", "snapshots", "sessions"} {
		if _, err := s.Pool().Exec(t.Context(), "ANALYZE "+pgx.Identifier{s.Schema(), table}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	plan := explain(t, s, s.LoadEventsQuery(), id, int64(1990))
	if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "on events_pkey") ||
		!strings.Contains(plan, "Index Cond: ((session_id = 'long'::text) AND (seq >= '1990'::bigint)") {
		t.Errorf("load from a seq: the plan does not read the range of events_pkey from the seq:\n%s", plan)
	}
	put, load, drop := s.SnapshotQueries()
	for name, q := range map[string]struct {
		q    string
		args []any
	}{
		"put":  {put, []any{id, int64(1995), []byte("{}"), time.Now()}},
		"load": {load, []any{id, time.Now()}},
		"drop": {drop, []any{id, time.Now()}},
	} {
		if plan := explain(t, s, q.q, q.args...); strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s snapshot: the plan reads a table through:\n%s", name, plan)
		}
	}
}
