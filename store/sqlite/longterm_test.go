package sqlite_test

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestLongTermConformance runs the long-term memory suite. Every store a
// test opens is on that test's one file, so that a second open is a
// reopen, through connections of its own.
func TestLongTermConformance(t *testing.T) {
	path := storetest.PerTest(func(t *testing.T) string { return filepath.Join(t.TempDir(), "cairn.db") })
	lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
		return openLongTerm(t, path(t), opts)
	})
}

// openLongTerm opens the long-term memory in the file at path.
func openLongTerm(t *testing.T, path string, opts longterm.Options) *sqlite.LongTerm {
	t.Helper()
	s, err := sqlite.OpenLongTerm(t.Context(), path, sqlite.LongTermOptions{Options: opts})
	return storetest.Opened(t, s, err)
}

// TestLongTerm_TextIndex puts, replaces, deletes, expires and sweeps
// items, with texts and without, then has FTS5 check its index against the
// items' texts: the index holds each text's tokens under its item's rowid,
// and nothing of an item erased.
func TestLongTerm_TextIndex(t *testing.T) {
	clock := time.Now()
	s, err := sqlite.OpenLongTerm(t.Context(), filepath.Join(t.TempDir(), "cairn.db"),
		sqlite.LongTermOptions{Options: longterm.Options{Now: func() time.Time { return clock }}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	put := func(ns, key, text string, ttl time.Duration) {
		t.Helper()
		if _, err := s.Put(ctx, longterm.Item{Namespace: ns, Key: key, Text: text, Value: json.RawMessage(`1`)}, longterm.PutOptions{TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		ns := fmt.Sprintf("u/%d", i%4)
		put(ns, fmt.Sprint("k", i), fmt.Sprintf("word%d shared text %d", i%7, i), time.Duration(i%3)*time.Minute)
		if i%5 == 0 {
			put(ns, fmt.Sprint("k", i), "replaced "+fmt.Sprint(i), 0)
		}
		if i%6 == 0 {
			put(ns, fmt.Sprint("k", i), "!!!", 0) // a text without a token
		}
		if i%9 == 0 {
			if err := s.Delete(ctx, ns, fmt.Sprint("k", i), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sqlite.CheckTextIndex(ctx, s); err != nil {
		t.Fatalf("after puts, replaces and deletes: %v", err)
	}
	clock = clock.Add(2 * time.Minute)
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	put("u/0", "k1", "over an expired one", 0)
	if _, err := s.DeleteNamespace(ctx, "u/1"); err != nil {
		t.Fatal(err)
	}
	if err := sqlite.CheckTextIndex(ctx, s); err != nil {
		t.Fatalf("after a sweep and a namespace delete: %v", err)
	}
	rs, err := s.Search(ctx, longterm.SearchOptions{Query: "shared replaced expired", Prefix: "u", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Item.Namespace == "u/1" || !strings.ContainsAny(r.Item.Text, "sre") {
			t.Errorf("search found %s %s %q", r.Item.Namespace, r.Item.Key, r.Item.Text)
		}
	}
}

// TestLongTerm_ScoresAsMemory: FTS5's bm25() and the memory backend's
// BM25 give one corpus the same scores and order.
func TestLongTerm_ScoresAsMemory(t *testing.T) {
	lite, err := sqlite.OpenLongTerm(t.Context(), filepath.Join(t.TempDir(), "cairn.db"), sqlite.LongTermOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	lttest.ScoresAsMemory(t, lite)
}

// TestLongTerm_SearchPaths searches in each of the ways SQLite's text
// search takes (a prefix of many items, ranked by FTS5 across every match;
// a prefix of few, ranked under its token; filters that keep few of the
// best rows, so that more are ranked and then one join ranks all), and
// checks each against the memory backend holding the same items.
func TestLongTerm_SearchPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("puts 2,500 items")
	}
	lite, err := sqlite.OpenLongTerm(t.Context(), filepath.Join(t.TempDir(), "cairn.db"), sqlite.LongTermOptions{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	mem, err := memory.NewLongTerm(longterm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields("amber basil cedar dune ember fjord grove heath iris juniper kelp lichen")
	for i := range 2500 {
		var text []string
		for j := range 2 + i%13 {
			text = append(text, words[(i*5+j*j)%len(words)])
		}
		it := longterm.Item{Namespace: fmt.Sprintf("big/b%d", i%10), Key: fmt.Sprintf("k%04d", i), Text: strings.Join(text, " ")}
		if i%97 == 0 {
			it.Labels = map[string]string{"rare": "yes"}
		}
		if i%499 == 0 {
			it.Labels = map[string]string{"rare": "yes", "rarer": "yes"}
		}
		for _, s := range []longterm.Store{lite, mem} {
			if _, err := s.Put(t.Context(), it, longterm.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rare := map[string]string{"rare": "yes"}
	for _, c := range []struct {
		name   string
		prefix string
		labels map[string]string
	}{
		{"many items", "big", nil},
		{"many items, few pass", "big", rare},
		{"few items", "big/b3", nil},
		{"few items, few pass", "big/b3", rare},
		{"everything, few pass", "", rare},
		// Every item matches: past the rows ranked first, the join.
		{"many items, too few pass", "big", map[string]string{"rarer": "yes"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := "amber fjord-grove kelp"
			if c.labels["rarer"] != "" {
				q = strings.Join(words, " ")
			}
			opts := longterm.SearchOptions{Query: q, Prefix: c.prefix, Labels: c.labels, Limit: 20}
			got, err := lite.Search(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			all := opts
			all.Limit = longterm.MaxSearchLimit
			want, err := mem.Search(t.Context(), all)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != min(20, len(want)) || len(got) == 0 {
				t.Fatalf("%d results, want %d", len(got), min(20, len(want)))
			}
			score := map[string]float64{}
			for _, r := range want {
				score[r.Item.Namespace+" "+r.Item.Key] = r.TextScore
			}
			for i, r := range got {
				place := r.Item.Namespace + " " + r.Item.Key
				w, ok := score[place]
				if !ok || math.Abs(w-r.TextScore) > 1e-9*max(1, w) || math.Abs(want[i].TextScore-r.TextScore) > 1e-9*max(1, w) {
					t.Errorf("result %d: %s scores %v; the memory backend scores it %v (found: %v) and has %v in that place", i, place, r.TextScore, w, ok, want[i].TextScore)
				}
				if !longterm.InPrefix(c.prefix, r.Item.Namespace) || c.labels != nil && r.Item.Labels["rare"] != "yes" {
					t.Errorf("result %d: %s with labels %v passed the filters", i, place, r.Item.Labels)
				}
			}
		})
	}
}

// TestLongTermConformance_Namespace runs the suite on the memory of a
// session namespace, in files that hold the same long-term namespaces
// and keys in the default session namespace and in a third: the store
// sees its own items only.
func TestLongTermConformance_Namespace(t *testing.T) {
	path := storetest.PerTest(func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "cairn.db")
		for _, ns := range []string{"", "other"} {
			lttest.PutAll(t, openLongTerm(t, path, longterm.Options{Namespace: ns}), lttest.ForeignItems)
		}
		return path
	})
	lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
		opts.Namespace = "tenant"
		return openLongTerm(t, path(t), opts)
	})
}

// TestLongTerm_SessionNamespaces: the memories of the default session
// namespace and two others, in one file, keep apart.
func TestLongTerm_SessionNamespaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	lttest.SessionNamespaces(t, [3]string{"", "a", "b"}, func(t *testing.T, ns string) longterm.Store {
		return openLongTerm(t, path, longterm.Options{Namespace: ns})
	})
}
