package fault

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	_ "github.com/cairnhq/cairn/store/all" // every scheme, for cairn.Open
	"github.com/cairnhq/cairn/store/mongodb"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/redis"
)

// The backends the reliability tests run on.
var (
	// Backends are every backend but memory, in the order tests run them.
	Backends = []string{"file", "sqlite", "postgres", "redis", "mongodb"}
	// ServerBackends are the ones reached over TCP, through a Proxy.
	ServerBackends = []string{"postgres", "redis", "mongodb"}
)

// Backend is one store under test: its URL and a namespace of the test's
// own, erased when the test ends.
type Backend struct {
	Name string
	URL  string // for a server, its real address (not a proxy's)
	NS   string
}

// NewBackend returns the backend name ("memory", "file", "sqlite",
// "postgres", "redis" or "mongodb") in a new namespace: file and sqlite in
// a temporary folder, the servers found through CAIRN_TEST_POSTGRES,
// CAIRN_TEST_REDIS and CAIRN_TEST_MONGODB (skipped when unset, failed
// under CI). The namespace is erased when the test ends.
func NewBackend(t testing.TB, name string) *Backend {
	t.Helper()
	b := &Backend{Name: name, NS: "rel_" + testenv.RandHex(6)}
	switch name {
	case "memory":
		b.URL = "memory:"
	case "file":
		b.URL = "file://" + filepath.Join(t.TempDir(), "sessions")
	case "sqlite":
		b.URL = "sqlite://" + filepath.Join(t.TempDir(), "cairn.db")
	case "postgres":
		b.URL = testenv.URL(t, testenv.Postgres)
	case "redis":
		b.URL = testenv.URL(t, testenv.Redis)
	case "mongodb":
		b.URL = testenv.URL(t, testenv.MongoDB)
	default:
		t.Fatalf("unknown backend %q", name)
	}
	t.Cleanup(func() { b.Erase(t) })
	return b
}

// Server reports whether the backend is reached over TCP.
func (b *Backend) Server() bool {
	return b.Name == "postgres" || b.Name == "redis" || b.Name == "mongodb"
}

// Open opens the backend's namespace at url (the backend's own URL, or a
// proxy's) and closes it when the test ends.
func (b *Backend) Open(t testing.TB, url string) cairn.Store {
	t.Helper()
	st, err := cairn.Open(t.Context(), url, cairn.StoreOptions{Namespace: b.NS})
	if err != nil {
		t.Fatalf("open %s: %v", b.Name, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Direct opens the backend's namespace straight at the server.
func (b *Backend) Direct(t testing.TB) cairn.Store {
	t.Helper()
	return b.Open(t, b.URL)
}

// Erase removes the namespace from a shared server: the schema, the keys
// or the collections.
func (b *Backend) Erase(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch b.Name {
	case "postgres":
		conn, err := pgx.Connect(ctx, b.URL)
		if err != nil {
			t.Errorf("erase namespace %s: %v", b.NS, err)
			return
		}
		defer conn.Close(ctx)
		q := "DROP SCHEMA IF EXISTS " + pgx.Identifier{postgres.Schema(b.NS)}.Sanitize() + " CASCADE"
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Errorf("erase namespace %s: %v", b.NS, err)
		}
	case "redis":
		if _, err := RedisKeys(ctx, b.URL, b.NS, true); err != nil {
			t.Errorf("erase namespace %s: %v", b.NS, err)
		}
	case "mongodb":
		st, err := mongodb.Open(ctx, b.URL, cairn.StoreOptions{Namespace: b.NS})
		if err != nil {
			t.Errorf("erase namespace %s: %v", b.NS, err)
			return
		}
		defer st.Close()
		c, err := mongo.Connect(options.Client().ApplyURI(b.URL))
		if err != nil {
			t.Errorf("erase namespace %s: %v", b.NS, err)
			return
		}
		defer c.Disconnect(ctx)
		db := c.Database(mongoDatabase(b.URL))
		sessions, events := st.Collections()
		for _, name := range []string{sessions, events, st.SnapshotCollection()} {
			if err := db.Collection(name).Drop(ctx); err != nil {
				t.Errorf("erase namespace %s: drop %s: %v", b.NS, name, err)
			}
		}
	}
}

// RedisKeys returns every key of namespace ns (cairn:<ns>:…) on the Redis
// server or Redis Cluster (every master) that storeURL names, and deletes
// them when del is set.
func RedisKeys(ctx context.Context, storeURL, ns string, del bool) ([]string, error) {
	o, err := redis.ParseStoreURL(storeURL)
	if err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		keys []string
	)
	scan := func(ctx context.Context, c *goredis.Client) error {
		iter := c.Scan(ctx, 0, "cairn:"+ns+":*", 1000).Iterator()
		for iter.Next(ctx) {
			if del {
				if err := c.Del(ctx, iter.Val()).Err(); err != nil {
					return err
				}
			}
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	switch o.Kind {
	case redis.KindCluster:
		c := goredis.NewClusterClient(o.Cluster)
		defer c.Close()
		err = c.ForEachMaster(ctx, scan)
	case redis.KindSentinel:
		c := goredis.NewFailoverClient(o.Failover)
		defer c.Close()
		err = scan(ctx, c)
	default:
		c := goredis.NewClient(o.Standalone)
		defer c.Close()
		err = scan(ctx, c)
	}
	return keys, err
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

// WithQuery returns rawURL with the query parameter key set to value.
func WithQuery(rawURL, key, value string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// QuickMongo returns a MongoDB URL with serverSelectionTimeoutMS=1000, so
// that an outage fails each call within a second instead of the driver's
// 30 s; other URLs are returned as they are.
func QuickMongo(rawURL string) string {
	if !strings.HasPrefix(rawURL, "mongodb://") {
		return rawURL
	}
	return WithQuery(rawURL, "serverSelectionTimeoutMS", "1000")
}
