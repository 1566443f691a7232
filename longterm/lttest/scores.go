package lttest

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/memory"
)

// ScoresAsMemory checks that s, an empty store, gives one corpus the same
// BM25 scores and order as the memory backend (ltdriver.Index), so that a
// search ranks alike on every backend that ranks by BM25.
func ScoresAsMemory(t *testing.T, s longterm.Store) {
	t.Helper()
	mem, err := memory.NewLongTerm(longterm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields("ada bob pizza jazz teal otter 17 café crème rain umbrella the a of lighthouse keeper")
	for i := range 60 {
		var text []string
		for j := range 3 + i%9 {
			text = append(text, words[(i*7+j*j*3+j)%len(words)])
		}
		if i%11 == 0 {
			text = nil // an item whose text has no token
		}
		it := longterm.Item{Namespace: fmt.Sprintf("n/%d", i%3), Key: fmt.Sprint("k", i), Text: strings.Join(text, " ") + " !", Value: json.RawMessage(`{}`)}
		for _, st := range []longterm.Store{s, mem} {
			if _, err := st.Put(t.Context(), it, longterm.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	compared := 0
	for _, q := range []string{"pizza", "teal-otter-17", "the lighthouse", "crème rain ada", "a", "otter teal", "nothing"} {
		for _, prefix := range []string{"", "n/1"} {
			opts := longterm.SearchOptions{Query: q, Prefix: prefix, Limit: 100}
			got, err := s.Search(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			want, err := mem.Search(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("search %q under %q: the store found %d, memory %d", q, prefix, len(got), len(want))
				continue
			}
			compared += len(got)
			for i := range got {
				g, w := got[i], want[i]
				if g.Item.Key != w.Item.Key || math.Abs(g.TextScore-w.TextScore) > 1e-9*max(1, w.TextScore) {
					t.Errorf("search %q under %q, result %d: the store %s %v, memory %s %v", q, prefix, i, g.Item.Key, g.TextScore, w.Item.Key, w.TextScore)
				}
			}
		}
	}
	if compared < 100 {
		t.Errorf("only %d results compared: the corpus does not test the scores", compared)
	}
}
