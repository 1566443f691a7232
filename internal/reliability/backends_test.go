package reliability

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testenv"
	_ "github.com/cairnhq/cairn/store/all"
	"github.com/cairnhq/cairn/store/mongodb"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/redis"
)

// The backends every reliability test runs on, in order.
var (
	allBackends    = []string{"file", "sqlite", "postgres", "redis", "mongodb"}
	serverBackends = []string{"postgres", "redis", "mongodb"}
)

// backend is one store under test: its URL and a namespace of the test's
// own, erased when the test ends.
type backend struct {
	name string
	url  string // the store's URL; for a server, its real address
	ns   string
}

// newBackend returns the backend name for t, skipping (or failing under
// CI) a server backend whose test server is not set.
func newBackend(t *testing.T, name string) *backend {
	t.Helper()
	b := &backend{name: name, ns: "rel_" + randHex(t)}
	switch name {
	case "file":
		b.url = "file://" + filepath.Join(t.TempDir(), "sessions")
	case "sqlite":
		b.url = "sqlite://" + filepath.Join(t.TempDir(), "cairn.db")
	case "postgres":
		b.url = testenv.URL(t, testenv.Postgres)
	case "redis":
		b.url = testenv.URL(t, testenv.Redis)
	case "mongodb":
		b.url = testenv.URL(t, testenv.MongoDB)
	default:
		t.Fatalf("unknown backend %q", name)
	}
	t.Cleanup(func() { b.erase(t) })
	return b
}

// server reports whether the backend is reached over TCP.
func (b *backend) server() bool {
	return b.name == "postgres" || b.name == "redis" || b.name == "mongodb"
}

// open opens the backend's namespace directly (not through any proxy).
func (b *backend) open(t *testing.T) cairn.Store {
	t.Helper()
	st, err := cairn.Open(t.Context(), b.url, cairn.StoreOptions{Namespace: b.ns})
	if err != nil {
		t.Fatalf("open %s: %v", b.name, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// erase removes the namespace from a shared server: the schema, the keys
// or the collections.
func (b *backend) erase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch b.name {
	case "postgres":
		conn, err := pgx.Connect(ctx, b.url)
		if err != nil {
			t.Errorf("erase namespace %s: %v", b.ns, err)
			return
		}
		defer conn.Close(ctx)
		q := "DROP SCHEMA IF EXISTS " + pgx.Identifier{postgres.Schema(b.ns)}.Sanitize() + " CASCADE"
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Errorf("erase namespace %s: %v", b.ns, err)
		}
	case "redis":
		opts, err := redis.ParseURL(b.url)
		if err != nil {
			t.Errorf("erase namespace %s: %v", b.ns, err)
			return
		}
		c := goredis.NewClient(opts)
		defer c.Close()
		var keys []string
		iter := c.Scan(ctx, 0, "cairn:"+b.ns+":*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("erase namespace %s: %v", b.ns, err)
		}
		if len(keys) > 0 {
			if err := c.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("erase namespace %s: %v", b.ns, err)
			}
		}
	case "mongodb":
		st, err := mongodb.Open(ctx, b.url, cairn.StoreOptions{Namespace: b.ns})
		if err != nil {
			t.Errorf("erase namespace %s: %v", b.ns, err)
			return
		}
		defer st.Close()
		c, err := mongo.Connect(options.Client().ApplyURI(b.url))
		if err != nil {
			t.Errorf("erase namespace %s: %v", b.ns, err)
			return
		}
		defer c.Disconnect(ctx)
		db := c.Database(mongoDatabase(b.url))
		sessions, events := st.Collections()
		for _, name := range []string{sessions, events} {
			if err := db.Collection(name).Drop(ctx); err != nil {
				t.Errorf("erase namespace %s: drop %s: %v", b.ns, name, err)
			}
		}
	}
}

// mongoDatabase returns the database a MongoDB URI names.
func mongoDatabase(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return mongodb.DefaultDatabase
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		return db
	}
	return mongodb.DefaultDatabase
}

func randHex(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}
