package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	schema "github.com/cairnhq/cairn/internal/migrations"
	"github.com/cairnhq/cairn/store/storetest"
)

// queryPlan returns the details of SQLite's plan for query.
func queryPlan(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN %s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var (
			id, parent, unused int
			detail             string
		)
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// scans returns the steps of plan that read a table or an index from end
// to end (not those that read the few rows of a subquery or of a JSON
// array argument).
func scans(plan []string) []string {
	var out []string
	for _, d := range plan {
		if strings.HasPrefix(d, "SCAN ") && !strings.HasPrefix(d, "SCAN (subquery") && !strings.HasPrefix(d, "SCAN json_each") {
			out = append(out, d)
		}
	}
	return out
}

// fillPlans creates sessions with statuses and labels for the plan tests.
func fillPlans(t *testing.T, s *Store) {
	t.Helper()
	for i := range 40 {
		id := fmt.Sprintf("s-%02d", i)
		labels := map[string]string{"env": []string{"prod", "dev"}[i%2], "team": fmt.Sprintf("t%d", i%5)}
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id, Labels: labels}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := s.Append(t.Context(), id, 0, storetest.UserTurn(0, "r", "q")...); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestList_QueryPlans: every List with a prefix, a status or a label, and
// every lookup by ID, reads through an index range or the primary key,
// never a scan of the sessions, under either plan listQuery chooses. A
// List with labels (and no prefix of few sessions) walks one label's
// range of session_labels_in_order in List order: no sort of all its
// sessions.
func TestList_QueryPlans(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "p.db"), Options{})
	fillPlans(t, s)
	completed := cairn.StatusCompleted
	first, err := s.List(t.Context(), cairn.ListOptions{Labels: map[string]string{"env": "dev"}, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	cursor := first.Next
	cases := []struct {
		name string
		opts cairn.ListOptions
	}{
		{"prefix", cairn.ListOptions{Prefix: "s-1"}},
		{"missing prefix", cairn.ListOptions{Prefix: "zz"}},
		{"status", cairn.ListOptions{Status: []cairn.Status{completed}}},
		{"missing status", cairn.ListOptions{Status: []cairn.Status{cairn.StatusRunning}}},
		{"statuses", cairn.ListOptions{Status: []cairn.Status{completed, cairn.StatusNew, cairn.StatusFailed}}},
		{"label", cairn.ListOptions{Labels: map[string]string{"team": "t3"}}},
		{"labels", cairn.ListOptions{Labels: map[string]string{"team": "t3", "env": "dev"}}},
		{"missing label", cairn.ListOptions{Labels: map[string]string{"team": "none"}}},
		{"status and label", cairn.ListOptions{Status: []cairn.Status{completed}, Labels: map[string]string{"env": "prod"}}},
		{"statuses and label, paged", cairn.ListOptions{Status: []cairn.Status{completed, cairn.StatusNew},
			Labels: map[string]string{"env": "prod"}, Limit: 2}},
		{"prefix and status", cairn.ListOptions{Prefix: "s-1", Status: []cairn.Status{completed}}},
		{"label, a page after the cursor in a window", cairn.ListOptions{Labels: map[string]string{"env": "dev"},
			Cursor: cursor, UpdatedAfter: time.Unix(1, 0), UpdatedBefore: time.Now().Add(time.Hour)}},
		{"prefix and label", cairn.ListOptions{Prefix: "s-", Labels: map[string]string{"team": "t3"}}},
	}
	for _, few := range []int{fewCandidates, 1} {
		t.Run(fmt.Sprintf("fewCandidates=%d", few), func(t *testing.T) {
			defer func(n int) { fewCandidates = n }(fewCandidates)
			fewCandidates = few
			for _, c := range cases {
				q, args, err := s.listQuery(t.Context(), c.opts)
				if err != nil {
					t.Fatal(err)
				}
				if q == "" {
					continue
				}
				plan := queryPlan(t, s.r, q, args...)
				if sc := scans(plan); len(sc) > 0 && (few > 1 || len(c.opts.Status) > 0) {
					t.Errorf("%s: the plan scans %v\nplan: %q\nquery: %s", c.name, sc, plan, q)
				}
				if len(c.opts.Labels) > 0 && (c.opts.Prefix == "" || few == 1) &&
					(!strings.Contains(plan[0], "INDEX session_labels_in_order (namespace=? AND key=? AND value=?") ||
						slices.ContainsFunc(plan, func(d string) bool { return strings.Contains(d, "TEMP B-TREE") })) {
					t.Errorf("%s: the plan does not walk the label in List order\nplan: %q\nquery: %s", c.name, plan, q)
				}
			}
		})
	}
	for name, q := range map[string]string{
		"load":         `SELECT ` + infoColumns + `, expires_at FROM sessions WHERE namespace = ? AND id = ?`,
		"count prefix": `SELECT count(*) FROM (SELECT 1 FROM sessions WHERE namespace = ? AND id >= ? AND id < ? LIMIT 10)`,
		"count label":  `SELECT count(*) FROM (SELECT 1 FROM session_labels WHERE namespace = ? AND key = ? AND value = ? LIMIT 10)`,
		"leases": `SELECT id FROM sessions WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))
			AND lease_holder <> ''`,
		"count expired": `SELECT count(*) FROM sessions WHERE namespace = ? AND expires_at > 0 AND expires_at <= ?`,
	} {
		args := []any{"default", "a", "b"}
		if name == "leases" || name == "count expired" {
			args = []any{"default", `["a"]`}
		}
		plan := queryPlan(t, s.r, q, args...)
		if sc := scans(plan); len(sc) > 0 {
			t.Errorf("%s: the plan scans %v\nplan: %q", name, sc, plan)
		}
	}
}

// TestList_BothPlans: a List gives the same pages whether listQuery reads
// the sessions of a prefix or a label and sorts them, or walks the
// namespace in List order; with every filter and the cursor.
func TestList_BothPlans(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "p.db"), Options{})
	fillPlans(t, s)
	all := func(o cairn.ListOptions) []string {
		var ids []string
		for {
			p, err := s.List(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range p.Sessions {
				ids = append(ids, i.ID)
			}
			if p.Next == "" {
				return ids
			}
			o.Cursor = p.Next
		}
	}
	for _, o := range []cairn.ListOptions{
		{Prefix: "s-1", Limit: 3},
		{Labels: map[string]string{"env": "dev"}, Limit: 4},
		{Labels: map[string]string{"env": "dev", "team": "t1"}, Limit: 1},
		{Prefix: "s-", Labels: map[string]string{"team": "t2"}, Status: []cairn.Status{cairn.StatusNew, cairn.StatusCompleted}, Limit: 2},
		{Status: []cairn.Status{cairn.StatusNew, cairn.StatusCompleted}, Limit: 7},
	} {
		want := all(o)
		fewCandidates = 1
		got := all(o)
		fewCandidates = 10000
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("List(%+v): walking in List order gives %v, reading the candidates gives %v", o, got, want)
		}
	}
}

// TestMigrate_Labels: a file at schema version 2 or 3 holding labelled
// sessions migrates, and its labels filter List afterwards, in List order;
// a row whose labels do not decode does not stop the migration. An append
// to a migrated session moves it to the top of its label's List, and
// deleting one deletes its labels.
func TestMigrate_Labels(t *testing.T) {
	for _, from := range []int{2, 3} {
		t.Run(fmt.Sprintf("from %d", from), func(t *testing.T) { testMigrateLabels(t, from) })
	}
}

func testMigrateLabels(t *testing.T, from int) {
	path := filepath.Join(t.TempDir(), "old.db")
	if _, err := createFile(path); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	apply := func(ms []schema.Migration) {
		for _, m := range ms {
			if _, err := db.ExecContext(t.Context(), m.SQL); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(t.Context(), `INSERT INTO schema_migrations VALUES (?, 1)`, m.Version); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(ms[:2])
	now := time.Now().UnixNano()
	for i, labels := range []string{`{"env":"prod","team":"a"}`, `{"team":"b"}`, `{}`, `{"team":"a"}`, `not json`} {
		if _, err := db.ExecContext(t.Context(), `INSERT INTO sessions (namespace, id, created_at, updated_at, status, labels)
			VALUES ('default', ?, ?, ?, 'new', ?)`, fmt.Sprintf("old-%d", i), now, now-int64(i), labels); err != nil {
			t.Fatal(err)
		}
	}
	apply(ms[2:from]) // 0003 fills session_labels from these
	db.Close()

	s := openTest(t, path, Options{})
	if got := appliedMigrations(t, s.w); len(got) != SchemaVersion() {
		t.Fatalf("after Open the file has %d migrations, want %d", len(got), SchemaVersion())
	}
	list := func(labels map[string]string) []string {
		p, err := s.List(t.Context(), cairn.ListOptions{Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, i := range p.Sessions {
			ids = append(ids, i.ID)
		}
		return ids
	}
	if got, want := list(map[string]string{"team": "a"}), []string{"old-0", "old-3"}; !slices.Equal(got, want) {
		t.Errorf("List(team=a) after migrating = %v, want %v", got, want)
	}
	if got, want := list(map[string]string{"team": "a", "env": "prod"}), []string{"old-0"}; !slices.Equal(got, want) {
		t.Errorf("List(team=a, env=prod) after migrating = %v, want %v", got, want)
	}
	if err := s.Append(t.Context(), "old-3", 0, storetest.UserTurn(0, "r", "q")...); err != nil {
		t.Fatal(err)
	}
	if got, want := list(map[string]string{"team": "a"}), []string{"old-3", "old-0"}; !slices.Equal(got, want) {
		t.Errorf("List(team=a) after an append to old-3 = %v, want %v", got, want)
	}
	if err := s.Delete(t.Context(), "old-0"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.r.QueryRowContext(t.Context(), `SELECT count(*) FROM session_labels WHERE session_id = 'old-0'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("labels of a deleted session: %d rows (%v), want none", n, err)
	}
}

// TestSweep_Batches: Sweep deletes many expired sessions in transactions
// of at most SweepBatch, between which another writer gets through; it
// keeps the live ones, and the file gives the freed pages back.
func TestSweep_Batches(t *testing.T) {
	clock := storetest.NewClock()
	path := filepath.Join(t.TempDir(), "sweep.db")
	s := openTest(t, path, Options{Synchronous: "NORMAL", StoreOptions: cairn.StoreOptions{TTL: time.Hour, Now: clock.Now}})
	const expired = 5*SweepBatch + 7
	for i := range expired + 3 {
		if i == expired {
			clock.Advance(2 * time.Hour) // the ones before have expired
		}
		id := fmt.Sprintf("s-%04d", i)
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id, Labels: map[string]string{"n": id}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(t.Context(), id, 0, storetest.UserTurn(0, "r", strings.Repeat("question ", 200))...); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.CountExpired(t.Context()); err != nil || n != expired {
		t.Fatalf("CountExpired = %d, %v; want %d", n, err, expired)
	}
	pages := pragma[int64](t, s.w, "page_count")

	var batches []int
	live := fmt.Sprintf("s-%04d", expired)
	s.afterSweepBatch = func(n int) {
		batches = append(batches, n)
		// A writer between two batches goes through at once.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		seq := int64(4 + len(batches))
		if err := s.Append(ctx, live, seq-1, storetest.Custom(seq, "between")); err != nil {
			t.Errorf("Append between two batches of Sweep: %v", err)
		}
	}
	n, err := s.Sweep(t.Context())
	if err != nil || n != expired {
		t.Fatalf("Sweep = %d, %v; want %d", n, err, expired)
	}
	sum := 0
	for _, b := range batches {
		if b > SweepBatch {
			t.Errorf("a batch of %d sessions, more than %d", b, SweepBatch)
		}
		sum += b
	}
	if sum != expired || len(batches) < expired/SweepBatch {
		t.Errorf("batches %v: want %d sessions in at least %d batches", batches, expired, expired/SweepBatch)
	}
	if n, err := s.CountExpired(t.Context()); err != nil || n != 0 {
		t.Errorf("CountExpired after Sweep = %d, %v; want 0", n, err)
	}
	p, err := s.List(t.Context(), cairn.ListOptions{})
	if err != nil || len(p.Sessions) != 3 {
		t.Errorf("List after Sweep: %d sessions, %v; want the 3 live ones", len(p.Sessions), err)
	}
	for _, table := range []string{"events", "session_labels"} {
		var rows int
		if err := s.r.QueryRowContext(t.Context(), `SELECT count(*) FROM `+table+` WHERE session_id < ?`, live).Scan(&rows); err != nil || rows != 0 {
			t.Errorf("%s rows of swept sessions: %d, %v; want none", table, rows, err)
		}
	}
	if free := pragma[int64](t, s.w, "freelist_count"); free != 0 {
		t.Errorf("freelist_count after Sweep = %d, want 0 (given back)", free)
	}
	if after := pragma[int64](t, s.w, "page_count"); after >= pages/2 {
		t.Errorf("the file has %d pages after Sweep, %d before: want fewer than half", after, pages)
	}
}

// TestSnapshot_QueryPlans: a load from a seq reads the range of the
// events' primary key from that seq, in seq order (no sort), and a
// snapshot is read, put and erased by its key.
func TestSnapshot_QueryPlans(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "p.db"), Options{})
	fillPlans(t, s)
	plan := queryPlan(t, s.r, loadEventsSQL, "default", "s-00", 3)
	if len(plan) != 1 || !strings.HasPrefix(plan[0], "SEARCH events USING ") || !strings.HasSuffix(plan[0], "(namespace=? AND session_id=? AND seq>?)") {
		t.Errorf("load from a seq: plan %q, want one range of the key (namespace, session_id, seq) and no sort", plan)
	}
	for name, q := range map[string]string{
		"load snapshot": loadSnapshotSQL,
		"drop snapshot": `DELETE FROM snapshots WHERE namespace = ? AND session_id = ?`,
		"erase":         `DELETE FROM snapshots WHERE namespace = ?1 AND session_id IN (` + expiredSQL + `)`,
	} {
		args := []any{"default", "s-00"}
		if name == "erase" {
			args = []any{"default", time.Now().UnixNano(), 10}
		}
		plan := queryPlan(t, s.w, q, args...)
		if sc := scans(plan); len(sc) > 0 {
			t.Errorf("%s: the plan scans %v\nplan: %q", name, sc, plan)
		}
	}
}
