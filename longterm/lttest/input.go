package lttest

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm"
)

// testBadInput gives every method arguments that break the rules: each
// call fails with an error wrapping ErrInvalid that names the argument,
// and nothing is written.
func testBadInput(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := t.Context()
	ns := h.ns("ok")
	good := func() longterm.Item { return item(ns, "k", "text") }
	with := func(f func(*longterm.Item)) longterm.Item { it := good(); f(&it); return it }
	long := strings.Repeat("x", 300)
	puts := []struct {
		name  string
		item  longterm.Item
		opts  longterm.PutOptions
		words []string
	}{
		{"empty namespace", with(func(it *longterm.Item) { it.Namespace = "" }), longterm.PutOptions{}, []string{"namespace", "empty"}},
		{"leading slash", with(func(it *longterm.Item) { it.Namespace = "/" + ns }), longterm.PutOptions{}, []string{"namespace", "starts with"}},
		{"trailing slash", with(func(it *longterm.Item) { it.Namespace = ns + "/" }), longterm.PutOptions{}, []string{"namespace", "ends with"}},
		{"empty segment", with(func(it *longterm.Item) { it.Namespace = h.root + "//x" }), longterm.PutOptions{}, []string{"namespace", "empty segment"}},
		{"dot-dot", with(func(it *longterm.Item) { it.Namespace = h.root + "/../x" }), longterm.PutOptions{}, []string{"namespace", `'.'`}},
		{"space", with(func(it *longterm.Item) { it.Namespace = h.root + "/a b" }), longterm.PutOptions{}, []string{"namespace", `' '`}},
		{"non-ASCII", with(func(it *longterm.Item) { it.Namespace = h.root + "/é" }), longterm.PutOptions{}, []string{"namespace", `'é'`}},
		{"long namespace", with(func(it *longterm.Item) { it.Namespace = h.root + "/" + long }), longterm.PutOptions{}, []string{"namespace", "limit"}},
		{"long segment", with(func(it *longterm.Item) { it.Namespace = h.root + "/" + long[:129] }), longterm.PutOptions{}, []string{"namespace", "segment"}},
		{"empty key", with(func(it *longterm.Item) { it.Key = "" }), longterm.PutOptions{}, []string{"key", "empty"}},
		{"slash in key", with(func(it *longterm.Item) { it.Key = "a/b" }), longterm.PutOptions{}, []string{"key", `'/'`}},
		{"dot key", with(func(it *longterm.Item) { it.Key = ".." }), longterm.PutOptions{}, []string{"key", "dots"}},
		{"control in key", with(func(it *longterm.Item) { it.Key = "a\nb" }), longterm.PutOptions{}, []string{"key", `'\n'`}},
		{"long key", with(func(it *longterm.Item) { it.Key = long }), longterm.PutOptions{}, []string{"key", "limit"}},
		{"value not JSON", with(func(it *longterm.Item) { it.Value = json.RawMessage(`{"a":`) }), longterm.PutOptions{}, []string{"value", "JSON"}},
		{"two values", with(func(it *longterm.Item) { it.Value = json.RawMessage(`1 2`) }), longterm.PutOptions{}, []string{"value"}},
		{"text not UTF-8", with(func(it *longterm.Item) { it.Text = "a\xffb" }), longterm.PutOptions{}, []string{"text", "UTF-8"}},
		{"empty label name", with(func(it *longterm.Item) { it.Labels = map[string]string{"": "x"} }), longterm.PutOptions{}, []string{"labels", "empty"}},
		{"long label", with(func(it *longterm.Item) { it.Labels = map[string]string{"k": long} }), longterm.PutOptions{}, []string{"labels", "limit"}},
		{"control in label", with(func(it *longterm.Item) { it.Labels = map[string]string{"k": "a\x00"} }), longterm.PutOptions{}, []string{"labels", "control"}},
		{"too many labels", with(func(it *longterm.Item) {
			it.Labels = map[string]string{}
			for i := range longterm.MaxLabels + 1 {
				it.Labels[string(rune('a'+i%26))+strings.Repeat("x", i)] = "v"
			}
		}), longterm.PutOptions{}, []string{"labels", "limit"}},
		{"NaN in vector", with(func(it *longterm.Item) { it.Vector = []float32{1, float32(math.NaN())} }), longterm.PutOptions{}, []string{"vector", "element 1"}},
		{"Inf in vector", with(func(it *longterm.Item) { it.Vector = []float32{float32(math.Inf(1))} }), longterm.PutOptions{}, []string{"vector", "element 0"}},
		{"long vector", with(func(it *longterm.Item) { it.Vector = make([]float32, longterm.MaxVectorDims+1) }), longterm.PutOptions{}, []string{"vector", "limit"}},
		{"bad source session", with(func(it *longterm.Item) { it.Source = longterm.Source{Session: "../x"} }), longterm.PutOptions{}, []string{"source"}},
		{"negative source seq", with(func(it *longterm.Item) { it.Source = longterm.Source{Session: "s", Seq: -1} }), longterm.PutOptions{}, []string{"source", "seq"}},
		{"negative TTL", good(), longterm.PutOptions{TTL: -time.Second}, []string{"ttl", "negative"}},
		{"bad IfVersion", good(), longterm.PutOptions{IfVersion: -2}, []string{"if_version"}},
	}
	for _, c := range puts {
		_, err := s.Put(ctx, c.item, c.opts)
		wantInvalid(t, "Put with "+c.name, err, c.words...)
	}
	bad := func(call string, err error, words ...string) { t.Helper(); wantInvalid(t, call, err, words...) }
	_, err := s.Get(ctx, "", "k")
	bad("Get with an empty namespace", err, "namespace")
	_, err = s.Get(ctx, ns, "a b")
	bad("Get with a bad key", err, "key")
	bad("Delete with a bad namespace", s.Delete(ctx, "a//b", "k", 0), "namespace")
	bad("Delete with a bad key", s.Delete(ctx, ns, "", 0), "key")
	bad("Delete with a negative version", s.Delete(ctx, ns, "k", -1), "if_version")
	_, err = s.DeleteNamespace(ctx, "a/")
	bad("DeleteNamespace with a bad prefix", err, "prefix")
	_, err = s.List(ctx, longterm.ListOptions{Prefix: "/a"})
	bad("List with a bad prefix", err, "prefix")
	_, err = s.List(ctx, longterm.ListOptions{Labels: map[string]string{"": "x"}})
	bad("List with a bad label", err, "labels")
	_, err = s.Namespaces(ctx, longterm.NamespaceOptions{Cursor: "../x"})
	bad("Namespaces with a bad cursor", err, "cursor")
	searches := []struct {
		name  string
		opts  longterm.SearchOptions
		words []string
	}{
		{"nothing to search", longterm.SearchOptions{Prefix: h.root}, []string{"query"}},
		{"blank query", longterm.SearchOptions{Query: "  \t", Prefix: h.root}, []string{"query"}},
		{"bad prefix", longterm.SearchOptions{Query: "x", Prefix: "a/"}, []string{"prefix"}},
		{"bad label", longterm.SearchOptions{Query: "x", Labels: map[string]string{"": ""}}, []string{"labels"}},
		{"negative limit", longterm.SearchOptions{Query: "x", Limit: -1}, []string{"limit"}},
		{"huge limit", longterm.SearchOptions{Query: "x", Limit: longterm.MaxSearchLimit + 1}, []string{"limit"}},
		{"weight above 1", longterm.SearchOptions{Query: "x", TextWeight: 1.5}, []string{"text_weight"}},
		{"NaN weight", longterm.SearchOptions{Query: "x", TextWeight: math.NaN()}, []string{"text_weight"}},
		{"unknown mode", longterm.SearchOptions{Query: "x", Mode: "fuzzy"}, []string{"mode", "fuzzy"}},
		{"vector mode without a vector", longterm.SearchOptions{Query: "x", Mode: longterm.ModeVector}, []string{"vector"}},
		{"hybrid mode without a vector", longterm.SearchOptions{Query: "x", Mode: longterm.ModeHybrid}, []string{"vector"}},
		{"text mode without a query", longterm.SearchOptions{Vector: []float32{1}, Mode: longterm.ModeText}, []string{"query"}},
		{"NaN in the vector", longterm.SearchOptions{Vector: []float32{float32(math.NaN())}}, []string{"vector"}},
	}
	for _, c := range searches {
		_, err := s.Search(ctx, c.opts)
		bad("Search with "+c.name, err, c.words...)
	}
	if got := listAll(t, s, longterm.ListOptions{Prefix: h.root}); len(got) != 0 {
		t.Errorf("refused calls wrote %v", places(got))
	}
	if _, err := s.Get(ctx, ns, "k"); !errors.Is(err, longterm.ErrNotFound) {
		t.Errorf("after refused Puts, Get: %v, want ErrNotFound", err)
	}
}

// testTooLarge checks the item size limit: ErrTooLarge, nothing written.
func testTooLarge(t *testing.T, h *harness) {
	s := h.storeWith(t, longterm.Options{MaxItemSize: 1000})
	ns := h.ns("big")
	big, _ := json.Marshal(strings.Repeat("a", 600))
	if _, err := s.Put(t.Context(), longterm.Item{Namespace: ns, Key: "v", Value: big, Text: strings.Repeat("b ", 250)}, longterm.PutOptions{}); !errors.Is(err, cairn.ErrTooLarge) {
		t.Errorf("Put of 1102 bytes past a limit of 1000: %v, want ErrTooLarge", err)
	}
	wantNotFound(t, s, ns, "v")
	// The text derived from a value counts too.
	if _, err := s.Put(t.Context(), longterm.Item{Namespace: ns, Key: "d", Value: big}, longterm.PutOptions{}); !errors.Is(err, cairn.ErrTooLarge) {
		t.Errorf("Put of a 602-byte value deriving a 600-byte text past a limit of 1000: %v, want ErrTooLarge", err)
	}
	mustPut(t, s, longterm.Item{Namespace: ns, Key: "fits", Value: big, Text: "short"}, longterm.PutOptions{})
	// The default limit holds a value of most of a megabyte.
	d := h.store(t)
	huge, _ := json.Marshal(strings.Repeat("z", longterm.DefaultMaxItemSize-1000))
	mustPut(t, d, longterm.Item{Namespace: ns, Key: "huge", Value: huge, Text: "huge"}, longterm.PutOptions{})
	if g := mustGet(t, d, ns, "huge"); len(g.Value) != len(huge) {
		t.Errorf("a value of %d bytes came back with %d", len(huge), len(g.Value))
	}
}

// testClosed checks every method after Close.
func testClosed(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := t.Context()
	ns := h.ns("c")
	mustPut(t, s, item(ns, "k", "t"), longterm.PutOptions{})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	check := func(call string, err error) {
		t.Helper()
		if !errors.Is(err, cairn.ErrClosed) {
			t.Errorf("%s after Close: %v, want cairn.ErrClosed", call, err)
		}
	}
	_, err := s.Put(ctx, item(ns, "k2", "t"), longterm.PutOptions{})
	check("Put", err)
	_, err = s.Get(ctx, ns, "k")
	check("Get", err)
	check("Delete", s.Delete(ctx, ns, "k", 0))
	_, err = s.DeleteNamespace(ctx, ns)
	check("DeleteNamespace", err)
	_, err = s.List(ctx, longterm.ListOptions{})
	check("List", err)
	_, err = s.Namespaces(ctx, longterm.NamespaceOptions{})
	check("Namespaces", err)
	_, err = s.Search(ctx, longterm.SearchOptions{Query: "t"})
	check("Search", err)
	if sw, ok := s.(longterm.Sweeper); ok {
		_, err = sw.Sweep(ctx)
		check("Sweep", err)
	}
	// Closing one store leaves the data to the others.
	mustGet(t, h.store(t), ns, "k")
}
