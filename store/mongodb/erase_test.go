package mongodb_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairnhq/cairn/store/crypt/crypttest"
)

// TestStore_Erasure writes a marker into a session, deletes it, and reads
// every document of every collection of the database as raw BSON for the
// marker, with and without encryption. FerretDB keeps its data in
// PostgreSQL (or SQLite), where deleted documents can stay on disk until a
// VACUUM (or on free pages); encrypted, the marker was never in any
// document.
func TestStore_Erasure(t *testing.T) {
	db := client(t)
	crypttest.Run(t, crypttest.Backend{
		URL: serverURI(t),
		Raw: func(t *testing.T, needle string) []string {
			ctx := t.Context()
			names, err := db.ListCollectionNames(ctx, bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			var where []string
			for _, name := range names {
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
			names, err := db.ListCollectionNames(context.Background(), bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range names {
				if strings.Contains(name, ns) && (!strings.Contains(ns, "__keys") || strings.Contains(name, "__keys")) {
					if err := db.Collection(name).Drop(context.Background()); err != nil {
						t.Errorf("drop %s: %v", name, err)
					}
				}
			}
		},
	})
}
