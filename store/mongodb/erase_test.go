package mongodb_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/mongodb"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_Erasure writes a marker into a session, deletes it, and reads
// every document of the test's collections (those of its namespaces, "er_"
// and its key namespaces, as the PostgreSQL test reads its schemas) as raw
// BSON for the marker, and for the text index's hash of its distinctive
// token (see holds), with and without encryption. FerretDB keeps its
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
				if strings.HasPrefix(name, "er_") && holds(t, db.Collection(name), needle) {
					where = append(where, name)
				}
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

// holds reports whether a document of coll holds needle, or, for the
// tokens of needle of 12 characters or more (the random part of a
// crypttest marker), the hash under which the text index keeps it.
func holds(t *testing.T, coll *mongo.Collection, needle string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	find := [][]byte{[]byte(needle)}
	for _, tok := range longterm.Tokens(needle) {
		if len(tok) >= 12 && tok != needle {
			find = append(find, []byte(mongodb.TokenHash(tok)))
		}
	}
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		for _, f := range find {
			if bytes.Contains(cur.Current, f) {
				return true
			}
		}
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}

// TestStore_SearchErasure: the text index holds a session's words (as
// hashes in its event documents) while it lives, and nothing of them once
// Delete, or expiry and Sweep, has taken it out: no document of the
// namespace's collections, the index's statistics included, holds the
// hash of its marker.
func TestStore_SearchErasure(t *testing.T) {
	db := client(t)
	clock := storetest.NewClock()
	s := openStore(t, cairn.StoreOptions{Namespace: "er_" + testenv.RandHex(5), TTL: time.Hour, Now: clock.Now})
	sessions, events := s.Collections()
	colls := []string{sessions, events, s.SearchCollection(), s.SnapshotCollection()}
	where := func(hash string) []string {
		var out []string
		for _, name := range colls {
			if holds(t, db.Collection(name), hash) {
				out = append(out, name)
			}
		}
		return out
	}
	for i, erase := range []func(id string) error{
		func(id string) error { return s.Delete(t.Context(), id) },
		func(id string) error {
			clock.Advance(2 * time.Hour)
			_, err := s.Sweep(t.Context())
			return err
		},
	} {
		token := "zq" + testenv.RandHex(8)
		hash := mongodb.TokenHash(token)
		id := fmt.Sprintf("erased%d", i)
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(t.Context(), id, 0, storetest.UserTurn(0, "r", "the word "+token)...); err != nil {
			t.Fatal(err)
		}
		if got := where(hash); !slices.Contains(got, events) {
			t.Fatalf("before the erasure the hash of the word is in %v, want it in %s: the test cannot see the index's erasure", got, events)
		}
		if hits, err := s.Search(t.Context(), token, 10); err != nil || len(hits) != 1 {
			t.Fatalf("Search before the erasure = %v, %v; want one hit", hits, err)
		}
		if err := erase(id); err != nil {
			t.Fatal(err)
		}
		if got := where(hash); len(got) > 0 {
			t.Errorf("erasure %d: the hash of the word is still in %v", i, got)
		}
		if hits, err := s.Search(t.Context(), token, 10); err != nil || len(hits) != 0 {
			t.Errorf("erasure %d: Search = %v, %v; want nothing", i, hits, err)
		}
	}
}
