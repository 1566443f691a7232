package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/words"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// checkSizes fails the test unless longterm_sizes holds the size of every
// entry of the text index, as longterm_text_docsize does, or 0 for one of
// 65,536 tokens or more.
func checkSizes(t *testing.T, db *sql.DB, what string) {
	t.Helper()
	rows, err := db.Query(`SELECT d.id, d.sz, s.sizes FROM longterm_text_docsize AS d
		LEFT JOIN longterm_sizes AS s ON s.chunk = d.id / 1000`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int64
		var sz, sizes []byte
		if err := rows.Scan(&id, &sz, &sizes); err != nil {
			t.Fatal(err)
		}
		want, err := varints(sz)
		if err != nil {
			t.Fatal(err)
		}
		if len(sizes) != sizesLen {
			t.Fatalf("%s: item %d: its row of sizes has %d bytes, want %d", what, id, len(sizes), sizesLen)
		}
		_, off := sizeAt(id)
		if got := binary.LittleEndian.Uint16(sizes[off:]); got != heldSize(want[0]+want[1]) {
			t.Fatalf("%s: item %d: size %d held, FTS5 %d", what, id, got, want[0]+want[1])
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("%s: no entries in the text index", what)
	}
}

// jsonInts scans a JSON array of integers.
type jsonInts struct{ p *[]int64 }

func (j jsonInts) Scan(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("a JSON array, not %T", v)
	}
	return json.Unmarshal([]byte(s), j.p)
}

// itemSizesHeld returns what longterm_sizes holds of items ids.
func itemSizesHeld(ctx context.Context, tx *sql.Tx, ids []int64) ([]uint16, error) {
	out := make([]uint16, len(ids))
	for i, id := range ids {
		chunk, off := sizeAt(id)
		var b []byte
		if err := tx.QueryRowContext(ctx, `SELECT sizes FROM longterm_sizes WHERE chunk = ?`, chunk).Scan(&b); err != nil {
			return nil, err
		}
		out[i] = binary.LittleEndian.Uint16(b[off:])
	}
	return out, nil
}

// sameSizes fails the test unless itemSizes reads FTS5's size of every
// item of the index, and of every 97th: the rows of sizes read whole, and
// each size cut from its row.
func sameSizes(t *testing.T, db *sql.DB, what string) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.Query(`SELECT id, sz FROM longterm_text_docsize ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	var want []float64
	for rows.Next() {
		var id int64
		var sz []byte
		if err := rows.Scan(&id, &sz); err != nil {
			t.Fatal(err)
		}
		n, err := docSize(sz)
		if err != nil {
			t.Fatal(err)
		}
		ids, want = append(ids, id), append(want, n)
	}
	rows.Close()
	var someIDs []int64
	var some []float64
	for j := 0; j < len(ids); j += 97 {
		someIDs, some = append(someIDs, ids[j]), append(some, want[j])
	}
	for _, c := range []struct {
		ids  []int64
		want []float64
	}{{ids, want}, {someIDs, some}} {
		got, err := itemSizes(t.Context(), tx, c.ids)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("%s: the sizes of %d items differ from FTS5's", what, len(c.ids))
		}
	}
}

// TestLongTermSizes checks that the sizes kept for the search follow new
// items, replacements (longer and shorter) and a text too long for two
// bytes, that migration 11 fills them for a file made before it, and
// that a search whose sizes are missing or damaged reads FTS5's and
// scores as FTS5 does, over all items (vocabScores) and under a prefix
// (fewHits).
func TestLongTermSizes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s, err := OpenLongTerm(ctx, path, LongTermOptions{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	w := words.New(5)
	put := func(ns, key, text string) {
		t.Helper()
		if _, err := s.Put(ctx, longterm.Item{Namespace: ns, Key: key, Text: text}, longterm.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2500 { // past the first two rows of sizes
		put(fmt.Sprintf("users/u%d", i%7), fmt.Sprint("k", i), w.Text(3+i%20))
	}
	put("users/u1", "k1", w.Text(40))                              // longer
	put("users/u2", "k2", "one")                                   // shorter
	put("users/long/x", "k", strings.Repeat("alpha beta ", 33000)) // 66,000 tokens: too many for two bytes
	if _, err := s.Put(ctx, longterm.Item{Namespace: "users/brief", Key: "k", Text: "a brief note"}, longterm.PutOptions{TTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// Erased items keep no size: a delete, a namespace's delete, a sweep.
	var gone []int64
	if err := s.w.QueryRow(`SELECT json_group_array(id) FROM longterm_items WHERE namespace IN ('users/u3', 'users/u4', 'users/brief')
		AND (namespace != 'users/u3' OR key = 'k3')`).Scan(jsonInts{&gone}); err != nil || len(gone) < 300 {
		t.Fatalf("the items to erase: %d, %v", len(gone), err)
	}
	if err := s.Delete(ctx, "users/u3", "k3", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteNamespace(ctx, "users/u4"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v; want 1", n, err)
	}
	tx, err := s.r.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if sizes, err := itemSizesHeld(ctx, tx, gone); err != nil || slices.ContainsFunc(sizes, func(n uint16) bool { return n != 0 }) {
		t.Fatalf("the sizes of %d erased items: %v, %v; want all 0", len(gone), sizes, err)
	}
	tx.Rollback()
	checkSizes(t, s.w, "after puts")
	sameSizes(t, s.r, "after puts")

	search := func(what, query string) {
		t.Helper()
		q, err := ltdriver.CheckSearch(ctx, s.opts, longterm.SearchOptions{Query: query, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		at, tokens, err := readState(ctx, tx, s.stmts.state)
		if err != nil {
			t.Fatal(err)
		}
		mine, ok, err := s.vocabScores(ctx, tx, q, at, tokens)
		if err != nil || !ok {
			t.Fatalf("%s: vocabScores: %v, %v", what, ok, err)
		}
		theirs, err := rankedRows(ctx, tx, matchQuery(q, false))
		if err != nil {
			t.Fatal(err)
		}
		if len(theirs) < 5 {
			t.Fatalf("%s: %q matches %d items, want more", what, query, len(theirs))
		}
		sameScores(t, what, mine, theirs)
		// Under a prefix of a few hundred items, fewHits reads the
		// sizes with the items it ranks.
		q.Prefix = "users/u1"
		few, ok, err := s.fewHits(ctx, tx, q, matchQuery(q, true), at, tokens, nil)
		if err != nil || !ok {
			t.Fatalf("%s: fewHits: %v, %v", what, ok, err)
		}
		want, err := s.rankedJoin(ctx, tx, q, matchQuery(q, true))
		if err != nil {
			t.Fatal(err)
		}
		sameHits(t, what+", under users/u1", few, want)
	}
	query := w.At(3) + " " + w.At(40) + " alpha"
	search("sizes held", query)

	// One row of sizes gone, another damaged: the search reads those
	// items' sizes from FTS5's table.
	if _, err := s.w.Exec(`DELETE FROM longterm_sizes WHERE chunk = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`UPDATE longterm_sizes SET sizes = x'0102' WHERE chunk = 1`); err != nil {
		t.Fatal(err)
	}
	search("sizes missing", query)
	sameSizes(t, s.r, "sizes missing")
	put("users/u1", "k1", w.Text(10)) // a put makes the damaged row anew, with its one size
	var sizes []byte
	if err := s.w.QueryRow(`SELECT sizes FROM longterm_sizes WHERE chunk = 0`).Scan(&sizes); err != nil || len(sizes) != sizesLen {
		t.Fatalf("the row of sizes after a put: %d bytes, %v", len(sizes), err)
	}
	search("sizes made anew", query)

	// A file made before migration 11: the migrations fill the sizes.
	if _, err := s.w.Exec(`DROP TABLE longterm_sizes; DROP TABLE longterm_vocab; DROP TABLE longterm_vocab_col;
		DELETE FROM schema_migrations WHERE version >= 11`); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenLongTerm(ctx, path, LongTermOptions{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkSizes(t, s.w, "after the migration")
	search("after the migration", query)
}
