package mongodb_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/mongodb"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestMain(m *testing.M) {
	testenv.Examples(testenv.MongoDB, "MONGODB_URI")
	code := m.Run()
	testenv.ReportSkips("store/mongodb")
	os.Exit(code)
}

// serverURI returns the test server's URI from CAIRN_TEST_MONGODB, or skips.
func serverURI(tb testing.TB) string {
	tb.Helper()
	return testenv.URL(tb, testenv.MongoDB) // e.g. mongodb://127.0.0.1:27017/
}

// openStore opens a store on the test server and, at cleanup, closes it and
// drops its namespace's collections.
func openStore(tb testing.TB, opts cairn.StoreOptions) *mongodb.Store {
	tb.Helper()
	uri := serverURI(tb)
	s, err := mongodb.Open(context.Background(), uri, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		dropCollections(tb, s)
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// client connects a client of the test's own to the test server, for
// looking at the collections directly.
func client(tb testing.TB) *mongo.Database {
	tb.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(serverURI(tb)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	cs, err := connstring.Parse(serverURI(tb))
	if err != nil {
		tb.Fatal(err)
	}
	name := cs.Database
	if name == "" {
		name = mongodb.DefaultDatabase
	}
	return c.Database(name)
}

func dropCollections(tb testing.TB, s *mongodb.Store) {
	tb.Helper()
	db := client(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sessions, events := s.Collections()
	for _, name := range []string{sessions, events, s.SnapshotCollection(), s.SearchCollection()} {
		if err := db.Collection(name).Drop(ctx); err != nil {
			tb.Errorf("drop %s: %v", name, err)
		}
	}
}

func TestConformance(t *testing.T) {
	abilities := storetest.Abilities{Leases: true, Claims: true, Sweep: true, Snapshots: true, Search: true,
		Envelopes: func(t *testing.T, s cairn.Store, id string) [][]byte {
			_, events := s.(*mongodb.Store).Collections()
			cur, err := client(t).Collection(events).Find(t.Context(), bson.D{{Key: "session", Value: id}},
				options.Find().SetSort(bson.D{{Key: "seq", Value: 1}}))
			if err != nil {
				t.Fatal(err)
			}
			defer cur.Close(t.Context())
			var envs [][]byte
			for cur.Next(t.Context()) {
				_, env, ok := cur.Current.Lookup("event").BinaryOK()
				if !ok {
					t.Fatalf("an event document without its binary envelope: %s", cur.Current)
				}
				envs = append(envs, bytes.Clone(env))
			}
			if err := cur.Err(); err != nil {
				t.Fatal(err)
			}
			return envs
		},
		DeleteEvent: func(t *testing.T, s cairn.Store, id string, seq int64) {
			_, events := s.(*mongodb.Store).Collections()
			res, err := client(t).Collection(events).DeleteOne(t.Context(), bson.D{{Key: "session", Value: id}, {Key: "seq", Value: seq}})
			if err != nil || res.DeletedCount != 1 {
				t.Fatalf("delete the event of seq %d: %v, %d deleted", seq, err, res.DeletedCount)
			}
		}}
	storetest.Run(t, abilities, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		return openStore(t, opts)
	})
}

func BenchmarkAppend(b *testing.B) {
	storetest.BenchmarkAppend(b, func(b *testing.B, opts cairn.StoreOptions) cairn.Store {
		return openStore(b, opts)
	})
}

// BenchmarkInsertOne measures the floor under Append: one bare InsertOne of
// a ~1 KB document through the same server, reported like BenchmarkAppend.
func BenchmarkInsertOne(b *testing.B) {
	db := client(b)
	coll := db.Collection("bench_floor_" + time.Now().Format("150405.000000"))
	b.Cleanup(func() { _ = coll.Drop(context.Background()) })
	payload := make([]byte, 1024)
	durs := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := coll.InsertOne(b.Context(), map[string]any{"seq": i, "event": payload}); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
		i++
	}
	storetest.ReportPercentiles(b, durs)
}

func TestOpen_Registered(t *testing.T) {
	uri := serverURI(t)
	ns := "reg_" + time.Now().Format("150405000000")
	s, err := cairn.Open(t.Context(), uri, cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatalf("cairn.Open(%q): %v", uri, err)
	}
	ms, ok := s.(*mongodb.Store)
	if !ok {
		t.Fatalf("cairn.Open returned a %T, want *mongodb.Store", s)
	}
	t.Cleanup(func() { dropCollections(t, ms); ms.Close() })
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
		t.Fatalf("Create: %v", err)
	}
}

func TestOpen_Unreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	_, err := mongodb.Open(ctx, "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500", cairn.StoreOptions{})
	if err == nil {
		t.Fatal("Open of a port with no server succeeded")
	}
}

func TestOpen_BadURI(t *testing.T) {
	for _, uri := range []string{"127.0.0.1:27017", "mongodb://h/a.b", "mongodb://h/a%2Fb"} {
		if _, err := mongodb.Open(t.Context(), uri, cairn.StoreOptions{}); err == nil {
			t.Errorf("Open(%q) succeeded, want an error", uri)
		}
	}
	if _, err := mongodb.Open(t.Context(), "mongodb://127.0.0.1:1/", cairn.StoreOptions{Namespace: "a/b"}); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("Open with namespace a/b: got %v, want ErrInvalidID", err)
	}
}

// BenchmarkRenew measures a lease renewal of a session that has ten
// events: the lease read, and its write under a hold of the session's next
// position.
func BenchmarkRenew(b *testing.B) {
	s := openStore(b, cairn.StoreOptions{Namespace: newNamespace()})
	ctx := b.Context()
	create(b, s, "r")
	for i := range int64(10) {
		appendOK(b, s, "r", i, storetest.Custom(i+1, "w"))
	}
	lease, err := s.Acquire(ctx, "r", "bench", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	durs := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		if lease, err = s.Renew(ctx, lease, time.Minute); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	storetest.ReportPercentiles(b, durs)
}

// BenchmarkLoad measures a Load of a session of ten events: the session
// document, the events, and the document again (see Load).
func BenchmarkLoad(b *testing.B) {
	s := openStore(b, cairn.StoreOptions{Namespace: newNamespace()})
	create(b, s, "l")
	for i := range int64(10) {
		appendOK(b, s, "l", i, storetest.Custom(i+1, "w"))
	}
	durs := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		rec, err := s.Load(b.Context(), "l", 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(rec.Events) != 10 {
			b.Fatalf("Load: %d events, want 10", len(rec.Events))
		}
		durs = append(durs, time.Since(t0))
	}
	storetest.ReportPercentiles(b, durs)
}
