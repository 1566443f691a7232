package mongodb_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairnhq/cairn/store/crypt/crypttest"
)

// TestStore_Erasure writes a marker into a session, deletes it, and reads
// every document of the test's collections (those of its namespaces, "er_"
// and its key namespaces, as the PostgreSQL test reads its schemas) as raw
// BSON for the marker, with and without encryption. FerretDB keeps its
// data in PostgreSQL (or SQLite), where deleted documents can stay on disk
// until a VACUUM (or on free pages); encrypted, the marker was never in any
// document.
//
// The search does not read the rest of the database: other tests and
// programs share the server, and one of them may hold hundreds of
// thousands of documents (a scan of everything ran past go test's
// timeout). Every call has a deadline.
func TestStore_Erasure(t *testing.T) {
	db := client(t)
	crypttest.Run(t, crypttest.Backend{
		URL: serverURI(t),
		Raw: func(t *testing.T, needle string) []string {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$regex", Value: "^er_"}}}})
			if err != nil {
				t.Fatal(err)
			}
			var where []string
			for _, name := range names {
				if !strings.HasPrefix(name, "er_") {
					continue
				}
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
		Drop: func(t *testing.T, ns string) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // also at cleanup, after t.Context ends
			defer cancel()
			names, err := db.ListCollectionNames(ctx, bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range names {
				if strings.Contains(name, ns) && (!strings.Contains(ns, "__keys") || strings.Contains(name, "__keys")) {
					if err := db.Collection(name).Drop(ctx); err != nil {
						t.Errorf("drop %s: %v", name, err)
					}
				}
			}
		},
	})
}
