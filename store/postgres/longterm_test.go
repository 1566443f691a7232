package postgres_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/storetest"
)

// ltNamespace returns a new namespace, whose schema is dropped when the
// test ends.
func ltNamespace(t *testing.T) string {
	ns := "lt_" + testenv.RandHex(6)
	dropSchemaLater(t, ns)
	return ns
}

// TestLongTermConformance runs the long-term memory suite. Every store a
// test opens is on that test's own namespace (a schema of its own), so
// that a second open is a reopen, through a pool of its own.
func TestLongTermConformance(t *testing.T) {
	d := dsn(t)
	ns := storetest.PerTest(ltNamespace)
	lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
		opts.Namespace = ns(t)
		s, err := postgres.OpenLongTerm(t.Context(), d, postgres.LongTermOptions{Options: opts})
		return storetest.Opened(t, s, err)
	})
}

// TestLongTermConformance_Encrypted runs the suite through the encrypting
// store (crypt.OpenLongTerm), opened by URL: the table then holds sealed
// values and the hashes of words, and search still ranks them.
func TestLongTermConformance_Encrypted(t *testing.T) {
	d := dsn(t)
	ring := crypttest.NewKeyring(t)
	nsURL := func(t *testing.T) string {
		ns := ltNamespace(t)
		pu, err := url.Parse(d)
		if err != nil {
			t.Fatal(err)
		}
		q := pu.Query()
		q.Set("namespace", ns)
		pu.RawQuery = q.Encode()
		return pu.String()
	}
	lttest.RunByURL(t, lttest.Abilities{Sweep: true}, nsURL, crypttest.LongTermOpener(ring))
}

// TestLongTerm_TextIndexPlan: on 20,000 items with their statistics, a
// text search reads the items its words match through the GIN index on
// the tsvector, not by reading the table; and the tsvector the store
// writes is the text's tokens with their positions, quoted (so a word
// that is tsquery syntax, such as "or" or "!", is a word or nothing).
func TestLongTerm_TextIndexPlan(t *testing.T) {
	s, pool := wordsStore(t)
	query, args := s.LongTermTextQuery([][]string{{"word42"}, {"word43", "common"}}, "users")
	rows, err := pool.Query(t.Context(), "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "longterm_items_tsv") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("the text search does not read through the GIN index:\n%s", plan)
	}
	rs, err := s.Search(t.Context(), longterm.SearchOptions{Query: "word43-common or !", Prefix: "users"})
	if err != nil || len(rs) != 1 || rs[0].Item.Key != "k43" {
		t.Errorf("search: %v, %v", rs, err)
	}
	// The index has no pending list for searches to scan (migration 0007).
	var opts []string
	if err := pool.QueryRow(t.Context(), `SELECT coalesce(c.reloptions, '{}') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = 'longterm_items_tsv'`, s.Schema()).Scan(&opts); err != nil || !slices.Contains(opts, "fastupdate=off") {
		t.Errorf("the text index's options: %v, %v; want fastupdate=off", opts, err)
	}
	if got, want := postgres.TSVector("Or the-THE ! 'x' or"), `'or':1,5 'the':2,3 'x':4`; got != want {
		t.Errorf("TSVector = %s, want %s", got, want)
	}
}

// TestLongTerm_SearchPlannedWithItsValues: a search is planned with its
// prefix and words each time, not once for all. After five runs of a
// prepared statement PostgreSQL may keep a generic plan, which cannot
// tell a prefix that holds every item from one that holds a few: it read
// the whole (path, key) index beside the text index for a search of
// every item (9 ms at 100,000 items, where the planned search takes 2).
// The index scans are counted by PostgreSQL's statistics, which a
// connection reports within seconds of going idle.
func TestLongTerm_SearchPlannedWithItsValues(t *testing.T) {
	s, pool := wordsStore(t)
	// Each search reads the items once, through the text index or the
	// (path, key) index (or the table, which would fail the wait).
	// Counted when the store's connections have ended, which reports
	// their statistics.
	scans := func() (path, text int64) {
		t.Helper()
		if err := pool.QueryRow(t.Context(), `SELECT
			coalesce(sum(idx_scan) FILTER (WHERE indexrelname = 'longterm_items_path_key_key'), 0),
			coalesce(sum(idx_scan) FILTER (WHERE indexrelname = 'longterm_items_tsv'), 0)
			FROM pg_stat_user_indexes WHERE schemaname = $1`, s.Schema()).Scan(&path, &text); err != nil {
			t.Fatal(err)
		}
		return path, text
	}
	path0, text0 := scans()
	const searches = 12
	for i := range searches {
		rs, err := s.Search(t.Context(), longterm.SearchOptions{Query: fmt.Sprint("word", 100+i), Prefix: "users"})
		if err != nil || len(rs) != 1 || rs[0].Item.Key != fmt.Sprint("k", 100+i) {
			t.Fatalf("search %d: %v, %v", i, rs, err)
		}
	}
	s.Close()
	deadline := time.Now().Add(30 * time.Second)
	path, text := scans()
	for path+text < path0+text0+searches && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		path, text = scans()
	}
	if text != text0+searches || path != path0 {
		t.Errorf("%d searches of a prefix that holds every item read the text index %d times and the (path, key) index %d times: each should read the text index alone",
			searches, text-text0, path-path0)
	}
}

// wordsStore is a long-term store of 20,000 items under users/u0 to
// users/u9, item k<i> holding the words word<i> and common, written
// straight into its table and analysed; and the test's admin pool.
func wordsStore(t *testing.T) (*postgres.LongTerm, *pgxpool.Pool) {
	t.Helper()
	s, err := postgres.OpenLongTerm(t.Context(), dsn(t), postgres.LongTermOptions{Options: longterm.Options{Namespace: ltNamespace(t)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	table := pgx.Identifier{s.Schema(), "longterm_items"}.Sanitize()
	pool := adminPool(t)
	if _, err := pool.Exec(t.Context(), `INSERT INTO `+table+` (namespace, path, key, value, text, tsv, version, created_at, updated_at)
		SELECT 'users/u' || (i % 10), 'users u' || (i % 10), 'k' || i, 'null', convert_to('word' || i || ' common', 'UTF8'),
			('''word' || i || ''':1 ''common'':2')::tsvector, i, 1, 1 FROM generate_series(1, 20000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `ANALYZE `+table); err != nil {
		t.Fatal(err)
	}
	return s, pool
}
