package lttest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cairnhq/cairn/longterm"
)

// testList checks List's order, its prefix and label filters, and that it
// returns vectors only when asked.
func testList(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := t.Context()
	var want []string
	for _, p := range []string{"b", "a", "a/x", "a-x", "a/x/y"} {
		for _, k := range []string{"k2", "K1", "k10", "k1"} {
			it := item(h.ns(p), k, "t")
			it.Labels = map[string]string{"ns": p, "k": k}
			it.Vector, it.VectorModel = []float32{1, 2}, "m"
			mustPut(t, s, it, longterm.PutOptions{})
		}
	}
	// Path order: a namespace, then those under it, then its siblings.
	under := func(ps ...string) []string {
		var out []string
		for _, p := range ps {
			for _, k := range []string{"K1", "k1", "k10", "k2"} {
				out = append(out, h.ns(p)+" "+k)
			}
		}
		return out
	}
	want = under("a", "a/x", "a/x/y", "a-x", "b")
	all := listAll(t, s, longterm.ListOptions{Prefix: h.root})
	if got := places(all); !slices.Equal(got, want) {
		t.Errorf("List in order:\n got %v\nwant %v", got, want)
	}
	for _, it := range all {
		if it.Vector != nil {
			t.Errorf("List without Vectors returned %s %s with its vector", it.Namespace, it.Key)
			break
		}
	}
	withVec := listAll(t, s, longterm.ListOptions{Prefix: h.root, Vectors: true})
	for _, it := range withVec {
		if !slices.Equal(it.Vector, []float32{1, 2}) || it.VectorModel != "m" {
			t.Errorf("List with Vectors: %s %s has %v %q", it.Namespace, it.Key, it.Vector, it.VectorModel)
			break
		}
	}
	if got, want := places(listAll(t, s, longterm.ListOptions{Prefix: h.ns("a")})), under("a", "a/x", "a/x/y"); !slices.Equal(got, want) {
		t.Errorf("List under a (not a-x):\n got %v\nwant %v", got, want)
	}
	if got := places(listAll(t, s, longterm.ListOptions{Prefix: h.ns("a/x/y")})); !slices.Equal(got, under("a/x/y")) {
		t.Errorf("List under a/x/y: %v", got)
	}
	if got := listAll(t, s, longterm.ListOptions{Prefix: h.ns("a/x/y/z")}); len(got) != 0 {
		t.Errorf("List under a namespace with nothing: %v", places(got))
	}
	got := places(listAll(t, s, longterm.ListOptions{Prefix: h.root, Labels: map[string]string{"k": "k1"}}))
	if wantL := []string{h.ns("a") + " k1", h.ns("a/x") + " k1", h.ns("a/x/y") + " k1", h.ns("a-x") + " k1", h.ns("b") + " k1"}; !slices.Equal(got, wantL) {
		t.Errorf("List by label k=k1:\n got %v\nwant %v", got, wantL)
	}
	got = places(listAll(t, s, longterm.ListOptions{Prefix: h.ns("a"), Labels: map[string]string{"k": "k2", "ns": "a/x"}}))
	if !slices.Equal(got, []string{h.ns("a/x") + " k2"}) {
		t.Errorf("List by two labels: %v", got)
	}
	if got := listAll(t, s, longterm.ListOptions{Prefix: h.root, Labels: map[string]string{"k": "none"}}); len(got) != 0 {
		t.Errorf("List by a label no item has: %v", places(got))
	}
	if _, err := s.List(ctx, longterm.ListOptions{Cursor: "not-a-cursor"}); err == nil {
		t.Error("List with a cursor List never made: no error")
	} else {
		wantInvalid(t, "List with a bad cursor", err, "cursor")
	}
}

// testListPaging pages through items, writing between pages: no item
// repeats, none that stayed goes missing.
func testListPaging(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := t.Context()
	for i := range 23 {
		mustPut(t, s, item(h.ns(fmt.Sprint("p", i%3)), fmt.Sprintf("k%02d", i), "t"), longterm.PutOptions{})
	}
	want := places(listAll(t, s, longterm.ListOptions{Prefix: h.root, Limit: 1000}))
	if len(want) != 23 {
		t.Fatalf("List of 23 items returned %d", len(want))
	}
	for _, size := range []int{1, 5, 7, 23, 24} {
		if got := places(listAll(t, s, longterm.ListOptions{Prefix: h.root, Limit: size})); !slices.Equal(got, want) {
			t.Errorf("pages of %d:\n got %v\nwant %v", size, got, want)
		}
	}
	p, err := s.List(ctx, longterm.ListOptions{Prefix: h.root, Limit: 23})
	if err != nil || len(p.Items) != 23 || p.Next != "" {
		t.Errorf("a page holding every item: %d items, next %q, %v; want 23 and no next", len(p.Items), p.Next, err)
	}
	// Write between pages: an item before the cursor, the next item
	// deleted, an item after the cursor.
	p, err = s.List(ctx, longterm.ListOptions{Prefix: h.root, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	seen := places(p.Items)
	mustPut(t, s, item(h.ns("p0"), "a-before", "t"), longterm.PutOptions{})
	rest := listAll(t, s, longterm.ListOptions{Prefix: h.root, Limit: 5, Cursor: p.Next})
	got := append(seen, places(rest)...)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("item %s went missing from pages read while writing", w)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Errorf("pages read while writing: %q after %q", got[i], got[i-1])
		}
	}
	if _, err := s.List(ctx, longterm.ListOptions{Limit: -1}); err == nil {
		t.Error("List with limit -1: no error")
	} else {
		wantInvalid(t, "List limit -1", err, "limit")
	}
	if _, err := s.List(ctx, longterm.ListOptions{Limit: longterm.MaxListLimit + 1}); err == nil {
		t.Error("List past MaxListLimit: no error")
	} else {
		wantInvalid(t, "List limit past the maximum", err, "limit")
	}
}

// testNamespaces checks Namespaces' prefix, depth and paging.
func testNamespaces(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := t.Context()
	for _, p := range []string{"users/ada/notes", "users/ada/facts", "users/ada", "users/bob/notes", "users/bo", "users-x", "agents/a/facts", "users/ada-x"} {
		mustPut(t, s, item(h.ns(p), "k", "t"), longterm.PutOptions{})
		mustPut(t, s, item(h.ns(p), "k2", "t"), longterm.PutOptions{})
	}
	all := func(opts longterm.NamespaceOptions) []string {
		t.Helper()
		var out []string
		for range 1000 {
			p, err := s.Namespaces(ctx, opts)
			if err != nil {
				t.Fatalf("Namespaces(%+v): %v", opts, err)
			}
			out = append(out, p.Namespaces...)
			if p.Next == "" {
				return out
			}
			opts.Cursor = p.Next
		}
		t.Fatal("Namespaces does not end")
		return nil
	}
	ns := func(ps ...string) []string {
		for i, p := range ps {
			ps[i] = h.ns(p)
		}
		return ps
	}
	cases := []struct {
		prefix string
		depth  int
		want   []string
	}{
		{"", 0, ns("agents/a/facts", "users/ada", "users/ada/facts", "users/ada/notes", "users/ada-x", "users/bo", "users/bob/notes", "users-x")},
		{"users", 0, ns("users/ada", "users/ada/facts", "users/ada/notes", "users/ada-x", "users/bo", "users/bob/notes")},
		{"users/ada", 0, ns("users/ada", "users/ada/facts", "users/ada/notes")},
		{"users/ad", 0, nil},
		{"users", 3, ns("users/ada", "users/ada-x", "users/bo", "users/bob")},
		{"", 2, ns("agents", "users", "users-x")},
		{"users/ada", 3, ns("users/ada")},
		{"users/ada", 1, ns("")},
	}
	for _, c := range cases {
		prefix := h.ns(c.prefix)
		for _, limit := range []int{1, 2, 100} {
			got := all(longterm.NamespaceOptions{Prefix: prefix, Depth: c.depth, Limit: limit})
			if !slices.Equal(got, c.want) {
				t.Errorf("Namespaces(prefix %s, depth %d, limit %d):\n got %v\nwant %v", prefix, c.depth, limit, got, c.want)
			}
		}
	}
	if _, err := s.Namespaces(ctx, longterm.NamespaceOptions{Depth: -1}); err == nil {
		t.Error("Namespaces with depth -1: no error")
	} else {
		wantInvalid(t, "Namespaces depth -1", err, "depth")
	}
	if _, err := s.Namespaces(ctx, longterm.NamespaceOptions{Prefix: "a//b"}); err == nil {
		t.Error("Namespaces with prefix a//b: no error")
	} else {
		wantInvalid(t, "Namespaces prefix a//b", err, "prefix", "a//b")
	}
}
