package mongodb_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/storetest"
)

// ltURL is the test server's URI with a namespace parameter.
func ltURL(tb testing.TB, ns string) string {
	u := serverURI(tb)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "namespace=" + ns
}

// ltCollections returns the collections of a namespace's long-term
// memory.
func ltCollections(t testing.TB, db *mongo.Database, ns string) []string {
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
func dropLater(t testing.TB, db *mongo.Database, ns string) {
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

// ltNamespace returns a new namespace named with a prefix, whose
// collections are dropped when the test ends.
func ltNamespace(t testing.TB, db *mongo.Database, prefix string) string {
	ns := prefix + testenv.RandHex(6)
	dropLater(t, db, ns)
	return ns
}

// runLongTerm runs the suite with stores that open opens by URL, each test
// on a namespace of its own.
func runLongTerm(t *testing.T, open func(ctx context.Context, url string, opts longterm.Options) (longterm.Store, error)) {
	db := client(t)
	lttest.RunByURL(t, lttest.Abilities{Sweep: true}, func(t *testing.T) string { return ltURL(t, ltNamespace(t, db, "lt_")) }, open)
}

// TestLongTermConformance runs the long-term memory suite, opened by URL
// through longterm.Open.
func TestLongTermConformance(t *testing.T) {
	runLongTerm(t, longterm.Open)
}

// TestLongTermConformance_Encrypted runs the suite through the encrypting
// store (crypt.OpenLongTerm).
func TestLongTermConformance_Encrypted(t *testing.T) {
	runLongTerm(t, crypttest.LongTermOpener(crypttest.NewKeyring(t)))
}

// TestLongTerm_Erasure writes markers into every field of long-term items,
// erases them (Delete, DeleteNamespace, a replace, Sweep), and reads every
// document of the namespace's collections as raw BSON for them, in clear
// and encrypted.
func TestLongTerm_Erasure(t *testing.T) {
	db := client(t)
	ns := ltNamespace(t, db, "lter_")
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

// TestLongTerm_ScoresAsMemory: the store's BM25 and the memory backend's
// give one corpus the same scores and order.
func TestLongTerm_ScoresAsMemory(t *testing.T) {
	lttest.ScoresAsMemory(t, openScored(t))
}

// openScored opens a store on a namespace of its own.
func openScored(t *testing.T) longterm.Store {
	s, err := longterm.Open(t.Context(), ltURL(t, ltNamespace(t, client(t), "lt_")), longterm.Options{})
	return storetest.Opened(t, s, err)
}

// TestLongTerm_SessionNamespaces: the memories of three session
// namespaces on one server keep apart.
func TestLongTerm_SessionNamespaces(t *testing.T) {
	db := client(t)
	var scopes [3]string
	for i := range scopes {
		scopes[i] = ltNamespace(t, db, "ltns_")
	}
	lttest.SessionNamespacesByURL(t, scopes, ltURL)
}

// BenchmarkLongTerm puts and searches at 1,000 and 10,000 items; see
// lttest.Bench. Each size is a namespace of its own.
func BenchmarkLongTerm(b *testing.B) {
	db := client(b)
	lttest.Bench(b, func(b *testing.B) longterm.Store {
		s, err := longterm.Open(b.Context(), ltURL(b, ltNamespace(b, db, "ltb_")), longterm.Options{})
		return storetest.Opened(b, s, err)
	})
}
