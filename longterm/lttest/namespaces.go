package lttest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cairnhq/cairn/longterm"
)

// ForeignItems are items to put beside a store under test, in another
// session namespace's memory: common long-term namespaces and keys, and
// words a search may look for.
var ForeignItems = []longterm.Item{
	{Namespace: "users/ada", Key: "food", Value: json.RawMessage(`"figs"`), Text: "Ada likes figs and tea"},
	{Namespace: "users/ada", Key: "k1", Value: json.RawMessage(`1`), Text: "alpha beta gamma"},
	{Namespace: "users/bob", Key: "pet", Value: json.RawMessage(`"otter"`), Text: "Bob has an otter"},
	{Namespace: "agents/support", Key: "facts", Value: json.RawMessage(`{}`), Text: "the quick brown fox"},
}

// PutAll puts items into s.
func PutAll(t *testing.T, s longterm.Store, items []longterm.Item) {
	t.Helper()
	for _, it := range items {
		if _, err := s.Put(t.Context(), it, longterm.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// SessionNamespaces checks that the long-term memories of three session
// namespaces of one store keep apart (open returns the memory of session
// namespace ns, with the store's Close registered): it puts ForeignItems
// and a namespace of its own into each, with values of its own, and each
// reads, lists, lists namespaces of, searches and deletes its own items
// alone. The three memories must start empty.
func SessionNamespaces(t *testing.T, scopes [3]string, open func(t *testing.T, ns string) longterm.Store) {
	t.Helper()
	stores := map[string]longterm.Store{}
	for _, sc := range scopes {
		s := open(t, sc)
		stores[sc] = s
		items := append([]longterm.Item{{Namespace: "only/s" + sc, Key: "mine"}}, ForeignItems...)
		for _, it := range items {
			it.Value = json.RawMessage(fmt.Sprintf("%q", "of "+sc))
			if _, err := s.Put(t.Context(), it, longterm.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, sc := range scopes {
		s, want := stores[sc], fmt.Sprintf("%q", "of "+sc)
		if it, err := s.Get(t.Context(), "users/ada", "food"); err != nil || string(it.Value) != want {
			t.Errorf("%q: Get = %v, %v; want its own value %s", sc, it, err, want)
		}
		page, err := s.List(t.Context(), longterm.ListOptions{})
		if err != nil || len(page.Items) != len(ForeignItems)+1 {
			t.Fatalf("%q: List = %v, %v; want %d items", sc, page, err, len(ForeignItems)+1)
		}
		for _, it := range page.Items {
			if string(it.Value) != want {
				t.Errorf("%q: List gave %s %s = %s, another namespace's", sc, it.Namespace, it.Key, it.Value)
			}
		}
		nss, err := s.Namespaces(t.Context(), longterm.NamespaceOptions{Prefix: "only"})
		if err != nil || len(nss.Namespaces) != 1 || nss.Namespaces[0] != "only/s"+sc {
			t.Errorf("%q: Namespaces(only) = %v, %v; want only/s%s", sc, nss, err, sc)
		}
		if all, err := s.Namespaces(t.Context(), longterm.NamespaceOptions{}); err != nil || len(all.Namespaces) != 4 {
			t.Errorf("%q: Namespaces = %v, %v; want its 4", sc, all, err)
		}
		for _, prefix := range []string{"", "users", "users/ada"} {
			rs, err := s.Search(t.Context(), longterm.SearchOptions{Query: "figs", Prefix: prefix})
			if err != nil || len(rs) != 1 || string(rs[0].Item.Value) != want || rs[0].Item.Namespace != "users/ada" {
				t.Errorf("%q: Search(figs, %q) = %v, %v; want its own users/ada food", sc, prefix, rs, err)
			}
		}
	}
	a, b := scopes[1], scopes[2]
	if n, err := stores[a].DeleteNamespace(t.Context(), "users"); err != nil || n != 3 {
		t.Fatalf("DeleteNamespace(users) in %q = %d, %v; want 3", a, n, err)
	}
	if err := stores[b].Delete(t.Context(), "agents/support", "facts", 0); err != nil {
		t.Fatal(err)
	}
	for sc, want := range map[string]int{scopes[0]: 5, a: 2, b: 4} {
		if page, err := stores[sc].List(t.Context(), longterm.ListOptions{}); err != nil || len(page.Items) != want {
			t.Errorf("%q after the deletes: %d items, %v; want %d", sc, len(page.Items), err, want)
		}
	}
}

// SessionNamespacesByURL is SessionNamespaces on the memories that
// longterm.Open opens at url(ns), one URL per session namespace.
func SessionNamespacesByURL(t *testing.T, scopes [3]string, url func(tb testing.TB, ns string) string) {
	SessionNamespaces(t, scopes, func(t *testing.T, ns string) longterm.Store {
		s, err := longterm.Open(t.Context(), url(t, ns), longterm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
