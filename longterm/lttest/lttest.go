// Package lttest is the conformance suite of the long-term memory
// contract (longterm.Store). Every backend runs all of it by adding one
// test function that declares the backend's optional abilities:
//
//	func TestLongTermConformance(t *testing.T) {
//		lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
//			s, err := mybackend.OpenLongTerm(t.Context(), dsn, opts)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite checks the round trip of every field, replacing, versions and
// their conflicts (ABA across a delete included), writers racing on one
// item, deleting items and namespaces by prefix, listing with its order,
// filters and cursor, namespaces with depth and paging, TTL on a
// controlled clock, text search (ranking, phrases, filters, queries that
// look like syntax), vector search, hybrid search through an Embedder,
// provenance, every kind of bad input, limits, every method after Close,
// and each declared ability.
package lttest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/storetest"
)

// Opener opens a store with the given options. Within one test (one t),
// every call must reach the same stored data, so that a second call is a
// reopen: a store on the same database, folder or server (for the memory
// backend, the same DB). The opener registers the store's Close with
// t.Cleanup.
type Opener func(t *testing.T, opts longterm.Options) longterm.Store

// Abilities are the optional abilities a backend declares. A store that
// lacks a declared ability, or has one it does not declare, fails.
type Abilities struct {
	Sweep bool // longterm.Sweeper
}

// Run runs the whole suite against the stores open returns. Each test
// writes under a namespace of its own, so a shared server can run the
// suite while holding other data.
func Run(t *testing.T, abilities Abilities, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, *harness)
	}{
		{"Abilities", testAbilities},
		{"PutGet", testPutGet},
		{"PutDefaults", testPutDefaults},
		{"Replace", testReplace},
		{"Versions", testVersions},
		{"ConcurrentPut", testConcurrentPut},
		{"Delete", testDelete},
		{"DeleteNamespace", testDeleteNamespace},
		{"DeleteBySession", testDeleteBySession},
		{"List", testList},
		{"ListPaging", testListPaging},
		{"Namespaces", testNamespaces},
		{"TTL", testTTL},
		{"LongTTL", testLongTTL},
		{"SearchText", testSearchText},
		{"SearchPhrases", testSearchPhrases},
		{"SearchQuerySyntax", testSearchQuerySyntax},
		{"SearchFilters", testSearchFilters},
		{"SearchVector", testSearchVector},
		{"SearchEmbedder", testSearchEmbedder},
		{"EmbedderFails", testEmbedderFails},
		{"Provenance", testProvenance},
		{"BadInput", testBadInput},
		{"TooLarge", testTooLarge},
		{"Closed", testClosed},
	}
	if abilities.Sweep {
		tests = append(tests, struct {
			name string
			fn   func(*testing.T, *harness)
		}{"Sweep", testSweep})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, &harness{open: open, abilities: abilities, root: "lt_" + testenv.RandHex(6), clock: storetest.NewClock()})
		})
	}
}

// RunByURL runs the whole suite against the stores open opens by URL
// (longterm.Open, or a wrapper's opener): url returns the URL of a test's
// own place, and is called once per test (storetest.PerTest).
func RunByURL(t *testing.T, abilities Abilities, url func(t *testing.T) string, open func(ctx context.Context, url string, opts longterm.Options) (longterm.Store, error)) {
	url = storetest.PerTest(url)
	Run(t, abilities, func(t *testing.T, opts longterm.Options) longterm.Store {
		s, err := open(t.Context(), url(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// harness opens stores for one test, which writes under root.
type harness struct {
	open      Opener
	abilities Abilities
	root      string
	clock     *storetest.Clock
}

// store opens a store with the test's clock.
func (h *harness) store(t *testing.T) longterm.Store {
	return h.storeWith(t, longterm.Options{})
}

func (h *harness) storeWith(t *testing.T, opts longterm.Options) longterm.Store {
	t.Helper()
	opts.Now = h.clock.Now
	s := h.open(t, opts)
	if s == nil {
		t.Fatal("opener returned a nil store")
	}
	return s
}

// ns returns the namespace path under the test's root.
func (h *harness) ns(path string) string {
	if path == "" {
		return h.root
	}
	return h.root + "/" + path
}

// item returns an item with a value holding text.
func item(ns, key, text string) longterm.Item {
	v, _ := json.Marshal(map[string]string{"note": key})
	return longterm.Item{Namespace: ns, Key: key, Value: v, Text: text}
}

func mustPut(t *testing.T, s longterm.Store, it longterm.Item, opts longterm.PutOptions) *longterm.Item {
	t.Helper()
	got, err := s.Put(t.Context(), it, opts)
	if err != nil {
		t.Fatalf("Put(%s %s): %v", it.Namespace, it.Key, err)
	}
	return got
}

func mustGet(t *testing.T, s longterm.Store, ns, key string) *longterm.Item {
	t.Helper()
	got, err := s.Get(t.Context(), ns, key)
	if err != nil {
		t.Fatalf("Get(%s %s): %v", ns, key, err)
	}
	return got
}

func wantNotFound(t *testing.T, s longterm.Store, ns, key string) {
	t.Helper()
	if got, err := s.Get(t.Context(), ns, key); !errors.Is(err, longterm.ErrNotFound) {
		t.Errorf("Get(%s %s) = %v, %v; want ErrNotFound", ns, key, got, err)
	}
}

// listAll returns every item under prefix, reading pages of size page.
func listAll(t *testing.T, s longterm.Store, opts longterm.ListOptions) []longterm.Item {
	t.Helper()
	var out []longterm.Item
	for range 10000 {
		p, err := s.List(t.Context(), opts)
		if err != nil {
			t.Fatalf("List(%+v): %v", opts, err)
		}
		out = append(out, p.Items...)
		if p.Next == "" {
			return out
		}
		if len(p.Items) == 0 {
			t.Fatalf("List(%+v) returned an empty page with a Next", opts)
		}
		opts.Cursor = p.Next
	}
	t.Fatal("List does not end")
	return nil
}

// places returns "namespace key" of each item.
func places(items []longterm.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Namespace + " " + it.Key
	}
	return out
}

func resultPlaces(rs []longterm.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Item.Namespace + " " + r.Item.Key
	}
	return out
}

func search(t *testing.T, s longterm.Store, opts longterm.SearchOptions) []longterm.Result {
	t.Helper()
	rs, err := s.Search(t.Context(), opts)
	if err != nil {
		t.Fatalf("Search(%+v): %v", opts, err)
	}
	checkResults(t, rs)
	return rs
}

// checkResults checks what every search result must be: scores in range,
// best first, no vector.
func checkResults(t *testing.T, rs []longterm.Result) {
	t.Helper()
	for i, r := range rs {
		if r.Score < 0 || r.Score > 1.0000001 {
			t.Errorf("result %d (%s %s): Score %v outside [0, 1]", i, r.Item.Namespace, r.Item.Key, r.Score)
		}
		if i > 0 && r.Score > rs[i-1].Score {
			t.Errorf("result %d (%s %s): Score %v above the one before it (%v)", i, r.Item.Namespace, r.Item.Key, r.Score, rs[i-1].Score)
		}
		if r.Item.Vector != nil {
			t.Errorf("result %d (%s %s) carries its vector; Search returns items without", i, r.Item.Namespace, r.Item.Key)
		}
		if r.Item.Version <= 0 || r.Item.UpdatedAt.IsZero() {
			t.Errorf("result %d (%s %s): version %d, updated %v: not a stored item", i, r.Item.Namespace, r.Item.Key, r.Item.Version, r.Item.UpdatedAt)
		}
	}
}

// wantInvalid checks that err wraps longterm.ErrInvalid and mentions each
// of words.
func wantInvalid(t *testing.T, call string, err error, words ...string) {
	t.Helper()
	if !errors.Is(err, longterm.ErrInvalid) {
		t.Errorf("%s: got %v, want an error wrapping ErrInvalid", call, err)
		return
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not mention %q", call, err, w)
		}
	}
}

// failingEmbedder fails every call.
type failingEmbedder struct{}

func (failingEmbedder) Name() string { return "failing" }
func (failingEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("the embedding service is down")
}
