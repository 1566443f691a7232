package mongodb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/memory"
)

// ltURL is the test server's URI with a namespace parameter.
func ltURL(t *testing.T, ns string) string {
	u := serverURI(t)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "namespace=" + ns
}

// ltCollections returns the collections of a namespace's long-term
// memory.
func ltCollections(t *testing.T, db *mongo.Database, ns string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // also at cleanup
	defer cancel()
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, ns+".") {
			out = append(out, n)
		}
	}
	return out
}

// dropLater drops a namespace's collections when the test ends.
func dropLater(t *testing.T, db *mongo.Database, ns string) {
	t.Cleanup(func() {
		for _, n := range ltCollections(t, db, ns) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := db.Collection(n).Drop(ctx); err != nil {
				t.Errorf("drop %s: %v", n, err)
			}
			cancel()
		}
	})
}

// runLongTerm runs the suite with stores that open opens by URL, each test
// on a namespace of its own.
func runLongTerm(t *testing.T, open func(t *testing.T, url string, opts longterm.Options) (longterm.Store, error)) {
	db := client(t)
	var mu sync.Mutex
	names := map[*testing.T]string{}
	lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
		mu.Lock()
		ns, ok := names[t]
		if !ok {
			ns = "lt_" + testenv.RandHex(6)
			names[t] = ns
			dropLater(t, db, ns)
		}
		mu.Unlock()
		s, err := open(t, ltURL(t, ns), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestLongTermConformance runs the long-term memory suite, opened by URL
// through longterm.Open.
func TestLongTermConformance(t *testing.T) {
	runLongTerm(t, func(t *testing.T, url string, opts longterm.Options) (longterm.Store, error) {
		return longterm.Open(t.Context(), url, opts)
	})
}

// TestLongTermConformance_Encrypted runs the suite through the encrypting
// store (crypt.OpenLongTerm).
func TestLongTermConformance_Encrypted(t *testing.T) {
	ring := crypttest.NewKeyring(t)
	runLongTerm(t, func(t *testing.T, url string, opts longterm.Options) (longterm.Store, error) {
		return crypt.OpenLongTerm(t.Context(), url, opts, ring)
	})
}

// TestLongTerm_Erasure writes markers into every field of long-term items,
// erases them (Delete, DeleteNamespace, a replace, Sweep), and reads every
// document of the namespace's collections as raw BSON for them, in clear
// and encrypted.
func TestLongTerm_Erasure(t *testing.T) {
	db := client(t)
	ns := "lter_" + testenv.RandHex(6)
	dropLater(t, db, ns)
	crypttest.RunLongTerm(t, crypttest.LongTermBackend{
		URL: ltURL(t, ns),
		Raw: func(t *testing.T, needle string) []string {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			var where []string
			for _, name := range ltCollections(t, db, ns) {
				cur, err := db.Collection(name).Find(ctx, bson.D{})
				if err != nil {
					t.Fatal(err)
				}
				for cur.Next(ctx) {
					if bytes.Contains(cur.Current, []byte(needle)) {
						where = append(where, name)
						break
					}
				}
				if err := cur.Err(); err != nil {
					t.Fatal(err)
				}
				cur.Close(ctx)
			}
			return where
		},
	})
}

// TestLongTerm_ScoresAsMemory checks that the store's BM25 and the memory
// backend's give one corpus the same scores and order, so that a search
// ranks alike on every backend.
func TestLongTerm_ScoresAsMemory(t *testing.T) {
	s := openScored(t)
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

// openScored opens a store on a namespace of its own.
func openScored(t *testing.T) longterm.Store {
	ns := "lt_" + testenv.RandHex(6)
	dropLater(t, client(t), ns)
	s, err := longterm.Open(t.Context(), ltURL(t, ns), longterm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
