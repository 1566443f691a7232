package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/words"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// TestFewHits_AsFTS5 checks that a search ranked in Go (fewHits) finds
// the items FTS5's bm25() ranking finds, in its order, with its scores,
// and that the items under a prefix are those in the table, while the
// counts kept between searches are carried past the store's own puts and
// counted again after its deletes and another store's writes to the file.
func TestFewHits_AsFTS5(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s, err := OpenLongTerm(ctx, path, LongTermOptions{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := OpenLongTerm(ctx, path, LongTermOptions{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	w := words.New(3)
	rng := rand.New(rand.NewPCG(3, 4))
	namespaces := []string{"users/u0", "users/u1", "users/u2", "users/u3", "teams/t0", "teams/t1/x"}
	put := func(st *LongTerm, key int) {
		t.Helper()
		text := w.Text(5 + rng.IntN(20))
		if rng.IntN(5) == 0 {
			text = w.Text(1 + rng.IntN(3)) // short: the bound on its length is tight
		}
		if rng.IntN(4) == 0 {
			text += " " + text // words held twice
		}
		switch rng.IntN(6) {
		case 0, 1:
			text += " alpha beta" // a phrase
		case 2:
			text += " beta alpha" // its words, not the phrase
		}
		it := longterm.Item{Namespace: namespaces[key%len(namespaces)], Key: fmt.Sprint("k", key), Text: text,
			Labels: map[string]string{"kind": []string{"a", "b"}[rng.IntN(2)]}}
		if _, err := st.Put(ctx, it, longterm.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 240 {
		put(s, i)
	}

	// compare runs queries under prefixes through both rankings and
	// returns how many of them fewHits ranked.
	compare := func(step string) int {
		t.Helper()
		ranked, vocab := 0, 0
		for i := range 30 {
			var query string
			switch i % 4 {
			case 0:
				query = w.Query()
			case 1:
				query = w.At(rng.IntN(30)) // common: past fewMatches under "users"
			case 2:
				query = "alpha-beta " + w.At(rng.IntN(2000)) // a phrase of two tokens
			default:
				query = w.At(rng.IntN(3000)) + " " + w.At(rng.IntN(300))
			}
			prefix := []string{"users", "users/u2", "teams", "teams/t1/x", "nowhere"}[i%5]
			var labels map[string]string
			if i%4 == 3 {
				labels = map[string]string{"kind": "a"}
			}
			q, err := ltdriver.CheckSearch(ctx, s.opts, longterm.SearchOptions{Query: query, Prefix: prefix, Labels: labels, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			q.Prefix = s.storedPrefix(q.Prefix)
			tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			at, tokens, err := readState(ctx, tx, s.stmts.state)
			if err != nil {
				t.Fatal(err)
			}
			under, err := s.counts.under(ctx, tx, at, q.Prefix)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := longterm.PrefixRange(q.Prefix)
			var items int64
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM longterm_items WHERE path >= ? AND path < ?`, lo, hi).Scan(&items); err != nil {
				t.Fatal(err)
			}
			if under != items {
				t.Fatalf("%s: %d items under %q, counted %d", step, items, prefix, under)
			}
			within := i%3 != 0 // the prefix's token ANDed, or not
			match := matchQuery(q, within)
			want, err := s.rankedJoin(ctx, tx, q, match) // FTS5's ranking in one query: the reference
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s: %q under %q, labels %v", step, query, prefix, q.Labels)
			few, ok, err := s.fewHits(ctx, tx, q, match, at, tokens, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				ranked++
				sameHits(t, "fewHits: "+what, few, want)
			}
			ranks, err := s.rankedHits(ctx, tx, q, match, within, at, tokens)
			if err != nil {
				t.Fatal(err)
			}
			if !within {
				// The scores read from the words' instances and the
				// sizes kept, against FTS5's, match by match.
				mine, ok, err := s.vocabScores(ctx, tx, q, at, tokens)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					vocab++
					theirs, err := rankedRows(ctx, tx, match)
					if err != nil {
						t.Fatal(err)
					}
					sameScores(t, "vocabScores: "+what, mine, theirs)
				}
			}
			sameHits(t, "rankedHits: "+what, ranks, want)
			tx.Rollback()
		}
		if ranked < 10 || vocab < 3 {
			t.Fatalf("%s: fewHits ranked %d queries of 30, vocabScores %d; want most of them, and some", step, ranked, vocab)
		}
		return ranked
	}

	compare("filled")
	// The store's own puts, new items and replacements, carry the counts.
	for i := range 40 {
		put(s, 220+i)
	}
	s.counts.mu.Lock()
	carried, words, prefixes := s.counts.at.revision, len(s.counts.words), len(s.counts.prefixes)
	s.counts.mu.Unlock()
	if carried != 280 || words == 0 || prefixes != 5 {
		t.Fatalf("after the store's own puts the counts are at revision %d with %d words and %d prefixes, want 280, some and 5",
			carried, words, prefixes)
	}
	compare("own puts")
	put(other, 7)
	compare("another store's put")
	// Another store's replacement (the rows stay as many) then the store's
	// own put: the counts must not be carried past the first.
	it := longterm.Item{Namespace: namespaces[9%len(namespaces)], Key: "k9", Text: "alpha beta alpha beta gamma"}
	if _, err := other.Put(ctx, it, longterm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	put(s, 600)
	compare("another store's put, then the store's own")
	if err := other.Delete(ctx, namespaces[11%len(namespaces)], "k11", 0); err != nil {
		t.Fatal(err)
	}
	compare("another store's delete")
	for i := range 5 {
		put(s, 500+i)
	}
	if err := s.Delete(ctx, namespaces[13%len(namespaces)], "k13", 0); err != nil {
		t.Fatal(err)
	}
	compare("own delete")
	if _, err := s.DeleteNamespace(ctx, "teams/t0"); err != nil {
		t.Fatal(err)
	}
	compare("namespace deleted")
}

// sameHits fails the test unless got has want's scores, place by place,
// but for the last bits (SQLite's log is not Go's), and the same items
// but among those that tie at the last place (FTS5 takes which it likes
// of them; fewHits takes them in List's order).
func sameHits(t *testing.T, what string, got, want []ltdriver.Hit) {
	t.Helper()
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b)) }
	if len(got) != len(want) {
		t.Fatalf("%s: found %d, FTS5 %d", what, len(got), len(want))
	}
	for j := range want {
		if !close(got[j].Text, want[j].Text) {
			t.Fatalf("%s, place %d: scores %v, FTS5 %v", what, j, got[j].Text, want[j].Text)
		}
	}
	if len(want) == 0 {
		return
	}
	last := want[len(want)-1].Text
	above := func(hs []ltdriver.Hit) map[any]bool {
		m := map[any]bool{}
		for _, h := range hs {
			if !close(h.Text, last) {
				m[h.Ref] = true
			}
		}
		return m
	}
	if a, b := above(got), above(want); !maps.Equal(a, b) {
		t.Fatalf("%s: found %v above the last place, FTS5 %v", what, a, b)
	}
}

// sameScores fails the test unless got and want score the same items the
// same, in the same order but among ties.
func sameScores(t *testing.T, what string, got, want []scored) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d matches, FTS5 %d", what, len(got), len(want))
	}
	byID := map[int64]float64{}
	for _, w := range want {
		byID[w.id] = w.score
	}
	for j, g := range got {
		w, ok := byID[g.id]
		if !ok || math.Abs(g.score-w) > 1e-12*math.Abs(w) {
			t.Fatalf("%s: item %d scores %v, FTS5 %v (held %v)", what, g.id, g.score, w, ok)
		}
		if math.Abs(g.score-want[j].score) > 1e-12*math.Abs(want[j].score) {
			t.Fatalf("%s, place %d: score %v, FTS5 %v", what, j, g.score, want[j].score)
		}
	}
}

// TestVarints reads SQLite's varints as FTS5 writes them.
func TestVarints(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want [2]int64
	}{
		{[]byte{0x05}, [2]int64{5, 0}},
		{[]byte{0x81, 0x00, 0x7f, 0x02}, [2]int64{128, 129}},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x02}, [2]int64{1<<8 | 2, 0}}, // nine bytes: 8×7 bits, then 8
	} {
		if got, err := varints(c.in); err != nil || got != c.want {
			t.Errorf("varints(%x) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if _, err := varints([]byte{0x81}); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("a cut varint: %v, want an error", err)
	}
}
