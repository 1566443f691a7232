package lttest

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/longterm"
)

// testSearchText checks text ranking: more of the query's words rank
// higher, a word said more often ranks higher, scores are in range and the
// best is 1, case does not matter, and Limit cuts.
func testSearchText(t *testing.T, h *harness) {
	s := h.store(t)
	ns := h.ns("food")
	// Texts of equal length, so that only the matches decide.
	texts := map[string]string{
		"both":   "ada loves pizza and jazz music on fridays",
		"pizza":  "ada loves pizza and quiet evenings at home",
		"jazz":   "bob loves jazz and loud evenings in town",
		"none":   "carol grows tomatoes and reads about boats",
		"thrice": "jazz jazz jazz said the drummer very loudly",
	}
	for k, text := range texts {
		mustPut(t, s, item(ns, k, text), longterm.PutOptions{})
	}
	rs := search(t, s, longterm.SearchOptions{Query: "PIZZA Jazz", Prefix: h.root})
	got := resultPlaces(rs)
	if len(got) != 4 || got[0] != ns+" both" || slices.Contains(got, ns+" none") {
		t.Fatalf("search pizza jazz: %v; want both first, then pizza, jazz and thrice, not none", got)
	}
	if rs[0].Score != 1 {
		t.Errorf("the best text result scores %v, want 1", rs[0].Score)
	}
	for _, r := range rs {
		if r.TextScore <= 0 || r.VectorScore != 0 {
			t.Errorf("%s: text score %v, vector score %v; want a positive text score and no vector score", r.Item.Key, r.TextScore, r.VectorScore)
		}
		if math.Abs(r.Score-r.TextScore/rs[0].TextScore) > 1e-9 {
			t.Errorf("%s: score %v, want its text score over the best one (%v)", r.Item.Key, r.Score, r.TextScore/rs[0].TextScore)
		}
	}
	rs = search(t, s, longterm.SearchOptions{Query: "jazz", Prefix: h.root})
	if got := resultPlaces(rs); len(got) != 3 || got[0] != ns+" thrice" {
		t.Errorf("search jazz: %v; want thrice (three times) first", got)
	}
	rs = search(t, s, longterm.SearchOptions{Query: "jazz", Prefix: h.root, Limit: 2})
	if len(rs) != 2 || rs[0].Item.Key != "thrice" {
		t.Errorf("search jazz, limit 2: %v", resultPlaces(rs))
	}
	if rs := search(t, s, longterm.SearchOptions{Query: "xylophone", Prefix: h.root}); len(rs) != 0 {
		t.Errorf("search for a word no item has: %v", resultPlaces(rs))
	}
	// The result is the stored item.
	rs = search(t, s, longterm.SearchOptions{Query: "tomatoes", Prefix: h.root})
	if len(rs) != 1 {
		t.Fatalf("search tomatoes: %v", resultPlaces(rs))
	}
	g := mustGet(t, s, ns, "none")
	g.Vector = nil
	sameItem(t, "the search result", &rs[0].Item, g)
}

// testSearchPhrases checks that a word of the query is a phrase of its
// tokens, and that texts in other scripts are found.
func testSearchPhrases(t *testing.T, h *harness) {
	s := h.store(t)
	ns := h.ns("ph")
	for k, text := range map[string]string{
		"tag":       "the password hint is teal-otter-17 remember it",
		"scattered": "a teal boat, an otter and 17 ducks",
		"spaced":    "teal otter 17 in a row",
		"french":    "un café crème, s'il vous plaît",
		"chinese":   "我喜欢 你好 世界",
		"email":     "write to ada@example.com today",
	} {
		mustPut(t, s, item(ns, k, text), longterm.PutOptions{})
	}
	cases := []struct {
		query string
		want  []string // in any order
	}{
		{"teal-otter-17", []string{"tag", "spaced"}},
		{"Teal-Otter-17!", []string{"tag", "spaced"}},
		{"otter-teal", nil},
		{"crème", []string{"french"}},
		{"CRÈME", []string{"french"}},
		{"creme", nil},
		{"你好", []string{"chinese"}},
		{"ada@example.com", []string{"email"}},
		{"example.com", []string{"email"}},
		{"s'il", []string{"french"}},
	}
	for _, c := range cases {
		rs := search(t, s, longterm.SearchOptions{Query: c.query, Prefix: h.root})
		var got []string
		for _, r := range rs {
			got = append(got, r.Item.Key)
		}
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("search %q: %v, want %v", c.query, got, want)
		}
	}
}

// testSearchQuerySyntax searches for queries that are syntax in some
// search engine: none is an error, each finds what its words find.
func testSearchQuerySyntax(t *testing.T, h *harness) {
	s := h.store(t)
	ns := h.ns("syn")
	const text = "near the star and or not column quote"
	mustPut(t, s, item(ns, "k", text), longterm.PutOptions{})
	for _, q := range []string{
		`"`, `""`, `"quote`, `star*`, `*`, `NEAR(star column)`, `near/3`, `column:star`, `{column}: star`,
		`^star`, `-star`, `star AND`, `OR`, `NOT not`, `(`, `)`, `star + column`, `'`, `\`, `%`, `_`,
		`;DROP TABLE x;--`, "\x00star", `$where`, `{"$ne":1}`, `*:*`, `@star`, "star\tcolumn\nquote",
	} {
		rs, err := s.Search(t.Context(), longterm.SearchOptions{Query: q, Prefix: h.root})
		if err != nil {
			if errors.Is(err, longterm.ErrInvalid) && strings.TrimSpace(q) == "" {
				continue
			}
			t.Errorf("search %q: %v", q, err)
			continue
		}
		checkResults(t, rs)
		want := 0
		if matches(text, q) {
			want = 1
		}
		if len(rs) != want {
			t.Errorf("search %q (phrases %v): %d results, want %d", q, longterm.Phrases(q), len(rs), want)
		}
	}
}

// testSearchFilters checks the prefix and label filters of a search.
func testSearchFilters(t *testing.T, h *harness) {
	s := h.store(t)
	for _, p := range []string{"users/ada", "users/ada/notes", "users/adam", "users/bob"} {
		for _, kind := range []string{"fact", "pref"} {
			it := item(h.ns(p), kind, "the lighthouse keeper "+p)
			it.Labels = map[string]string{"kind": kind, "owner": strings.Split(p, "/")[1]}
			mustPut(t, s, it, longterm.PutOptions{})
		}
	}
	mustPut(t, s, item(h.ns("users/ada"), "old", "lighthouse"), longterm.PutOptions{TTL: time.Minute})
	h.clock.Advance(time.Minute)
	cases := []struct {
		prefix string
		labels map[string]string
		want   []string
	}{
		{"users/ada", nil, []string{"users/ada fact", "users/ada pref", "users/ada/notes fact", "users/ada/notes pref"}},
		{"users/ada/notes", nil, []string{"users/ada/notes fact", "users/ada/notes pref"}},
		{"users", map[string]string{"kind": "fact"}, []string{"users/ada fact", "users/ada/notes fact", "users/adam fact", "users/bob fact"}},
		{"users", map[string]string{"kind": "fact", "owner": "adam"}, []string{"users/adam fact"}},
		{"users", map[string]string{"kind": "other"}, nil},
		{"users/ad", nil, nil},
	}
	for _, c := range cases {
		rs := search(t, s, longterm.SearchOptions{Query: "lighthouse", Prefix: h.ns(c.prefix), Labels: c.labels, Limit: 100})
		got := resultPlaces(rs)
		slices.Sort(got)
		var want []string
		for _, w := range c.want {
			ns, k, _ := strings.Cut(w, " ")
			want = append(want, h.ns(ns)+" "+k)
		}
		if !slices.Equal(got, want) {
			t.Errorf("search under %s with %v:\n got %v\nwant %v", c.prefix, c.labels, got, want)
		}
	}
}

// testSearchVector checks vector search with vectors the caller gives:
// cosine order and scores, only vectors of the search's model and length,
// and hybrid scores.
func testSearchVector(t *testing.T, h *harness) {
	s := h.store(t)
	ns := h.ns("vec")
	put := func(key, text, model string, v ...float32) {
		mustPut(t, s, longterm.Item{Namespace: ns, Key: key, Text: text, Vector: v, VectorModel: model}, longterm.PutOptions{})
	}
	put("east", "sunrise over the sea", "m", 1, 0, 0)
	put("north-east", "a cold morning wind", "m", 1, 1, 0)
	put("west", "sunset over the sea", "m", -1, 0, 0)
	put("up", "sunrise in the mountains", "m", 0, 0, 1)
	put("other-model", "sunrise", "m2", 1, 0, 0)
	put("other-length", "sunrise", "m", 1, 0)
	put("no-vector", "sunrise at noon", "")
	rs := search(t, s, longterm.SearchOptions{Vector: []float32{2, 0, 0}, VectorModel: "m", Prefix: h.root})
	got := resultPlaces(rs)
	want := []string{ns + " east", ns + " north-east", ns + " up", ns + " west"}
	if !slices.Equal(got, want) {
		t.Fatalf("vector search:\n got %v\nwant %v", got, want)
	}
	wantCos := []float64{1, 1 / math.Sqrt2, 0, -1}
	for i, r := range rs {
		if math.Abs(r.VectorScore-wantCos[i]) > 1e-6 || math.Abs(r.Score-max(0, wantCos[i])) > 1e-6 || r.TextScore != 0 {
			t.Errorf("%s: vector score %v, score %v, text score %v; want %v, %v, 0", r.Item.Key, r.VectorScore, r.Score, r.TextScore, wantCos[i], max(0, wantCos[i]))
		}
	}
	rs = search(t, s, longterm.SearchOptions{Vector: []float32{1, 0, 0}, VectorModel: "m", Prefix: h.root, Limit: 1})
	if got := resultPlaces(rs); !slices.Equal(got, []string{ns + " east"}) {
		t.Errorf("vector search, limit 1: %v", got)
	}
	if rs := search(t, s, longterm.SearchOptions{Vector: []float32{1, 0, 0}, VectorModel: "none", Prefix: h.root}); len(rs) != 0 {
		t.Errorf("vector search of a model no item has: %v", resultPlaces(rs))
	}
	// Hybrid: "sunrise" matches east, up, other-model, other-length and
	// no-vector by text; the vector favours east, then north-east.
	rs = search(t, s, longterm.SearchOptions{Query: "sunrise", Vector: []float32{1, 0, 0}, VectorModel: "m", Prefix: h.root, Limit: 100})
	if len(rs) == 0 || rs[0].Item.Key != "east" {
		t.Fatalf("hybrid search: %v; want east first (text and vector)", resultPlaces(rs))
	}
	best := 0.0
	for _, r := range rs {
		best = max(best, r.TextScore)
	}
	for _, r := range rs {
		want := longterm.DefaultTextWeight*r.TextScore/best + (1-longterm.DefaultTextWeight)*max(0, r.VectorScore)
		if math.Abs(r.Score-want) > 1e-9 {
			t.Errorf("hybrid %s: score %v, want %v (text %v of best %v, vector %v)", r.Item.Key, r.Score, want, r.TextScore, best, r.VectorScore)
		}
	}
	for _, key := range []string{"north-east", "no-vector", "other-model"} {
		if !slices.Contains(resultPlaces(rs), ns+" "+key) {
			t.Errorf("hybrid search lacks %s (found by one side): %v", key, resultPlaces(rs))
		}
	}
	// Text mode ignores the vector; weight 1 is text alone in hybrid.
	rs = search(t, s, longterm.SearchOptions{Query: "sunrise", Vector: []float32{1, 0, 0}, VectorModel: "m", Mode: longterm.ModeText, Prefix: h.root})
	for _, r := range rs {
		if r.VectorScore != 0 {
			t.Errorf("text-mode search gave %s a vector score %v", r.Item.Key, r.VectorScore)
		}
	}
	if slices.Contains(resultPlaces(rs), ns+" north-east") {
		t.Errorf("text-mode search found north-east, which only the vector finds")
	}
}

// testSearchEmbedder checks a store with an Embedder: Put computes
// vectors, Search the query's, and semantic and hybrid search use them.
func testSearchEmbedder(t *testing.T, h *harness) {
	emb := longterm.HashEmbedder{Dims: 64}
	s := h.storeWith(t, longterm.Options{Embedder: emb})
	ns := h.ns("emb")
	mustPut(t, s, item(ns, "cats", "my cats sleep all day"), longterm.PutOptions{})
	mustPut(t, s, item(ns, "boats", "sailing boats on the lake"), longterm.PutOptions{})
	mustPut(t, s, longterm.Item{Namespace: ns, Key: "given", Text: "cats", Vector: []float32{1}, VectorModel: "mine"}, longterm.PutOptions{})
	g := mustGet(t, s, ns, "cats")
	want, _ := emb.Embed(t.Context(), []string{"my cats sleep all day"})
	if g.VectorModel != emb.Name() || !slices.Equal(g.Vector, want[0]) {
		t.Errorf("Put with an Embedder: vector model %q, vector %v; want %q and the embedder's vector", g.VectorModel, g.Vector[:4], emb.Name())
	}
	if g := mustGet(t, s, ns, "given"); g.VectorModel != "mine" || !slices.Equal(g.Vector, []float32{1}) {
		t.Errorf("a given vector was replaced: %q %v", g.VectorModel, g.Vector)
	}
	// "cat" is no word of any text: the text side finds nothing, the
	// hashed pieces of words find the cats.
	rs := search(t, s, longterm.SearchOptions{Query: "cat", Mode: longterm.ModeVector, Prefix: h.root})
	if len(rs) < 1 || rs[0].Item.Key != "cats" || rs[0].VectorScore <= 0 {
		t.Errorf("vector search for cat: %v; want cats first", resultPlaces(rs))
	}
	rs = search(t, s, longterm.SearchOptions{Query: "sleeping cats", Prefix: h.root})
	if len(rs) < 1 || rs[0].Item.Key != "cats" || rs[0].TextScore <= 0 || rs[0].VectorScore <= 0 {
		t.Errorf("hybrid search (auto) for sleeping cats: %+v; want cats first with both scores", rs)
	}
	for _, r := range rs {
		if r.Item.Key == "given" && r.VectorScore != 0 {
			t.Errorf("a vector of model mine was compared with the embedder's: %v", r.VectorScore)
		}
	}
}

// testEmbedderFails checks that a Put whose vector cannot be computed
// writes nothing, and a search whose vector cannot be computed fails.
func testEmbedderFails(t *testing.T, h *harness) {
	s := h.storeWith(t, longterm.Options{Embedder: failingEmbedder{}})
	ns := h.ns("fail")
	if _, err := s.Put(t.Context(), item(ns, "k", "some text"), longterm.PutOptions{}); err == nil || !strings.Contains(err.Error(), "embedding service is down") {
		t.Errorf("Put through a failing embedder: %v, want its error", err)
	}
	wantNotFound(t, s, ns, "k")
	// An item given its vector needs no embedder.
	mustPut(t, s, longterm.Item{Namespace: ns, Key: "given", Text: "x", Vector: []float32{1}, VectorModel: "m"}, longterm.PutOptions{})
	if _, err := s.Search(t.Context(), longterm.SearchOptions{Query: "text", Prefix: h.root}); err == nil {
		t.Error("Search through a failing embedder: no error")
	}
	if _, err := s.Search(t.Context(), longterm.SearchOptions{Query: "text", Mode: longterm.ModeText, Prefix: h.root}); err != nil {
		t.Errorf("text-mode Search needs no embedder: %v", err)
	}
}

// matches reports whether text holds one of the query's phrases, its
// tokens in a row.
func matches(text, query string) bool {
	toks := longterm.Tokens(text)
	for _, p := range longterm.Phrases(query) {
		for i := 0; i+len(p) <= len(toks); i++ {
			if slices.Equal(toks[i:i+len(p)], p) {
				return true
			}
		}
	}
	return false
}
