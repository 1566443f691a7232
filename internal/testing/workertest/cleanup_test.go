//go:build unix

package workertest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/store/mongodb"
	"github.com/cairnhq/cairn/store/postgres"
)

// The tests' namespaces live on shared servers. Each test erases its own
// when it ends (eraseLater, with fault.Backend's Erase), and TestMain fails
// the run if any namespace a test made still holds a key, a schema or a
// collection (leftovers).

var (
	madeMu sync.Mutex
	made   [][2]string // {store URL, namespace} of every test's namespace
)

// eraseLater erases namespace ns on the server storeURL names when the
// test ends, and records it for TestMain's check.
func eraseLater(t *testing.T, storeURL, ns string) {
	madeMu.Lock()
	made = append(made, [2]string{storeURL, ns})
	madeMu.Unlock()
	if name := backendName(storeURL); name != "" {
		b := &fault.Backend{Name: name, URL: storeURL, NS: ns}
		t.Cleanup(func() { b.Erase(t) })
	}
}

// checkLeftovers returns an error naming what the recorded namespaces
// still hold.
func checkLeftovers() error {
	madeMu.Lock()
	defer madeMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var msgs []string
	for _, m := range made {
		left, err := leftovers(ctx, m[0], m[1])
		if err != nil {
			return err
		}
		if len(left) > 0 {
			msgs = append(msgs, fmt.Sprintf("namespace %s on %s still holds %d: %s", m[1], scheme(m[0]), len(left), strings.Join(left[:min(len(left), 5)], ", ")))
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("tests left data on the shared servers:\n%s", strings.Join(msgs, "\n"))
	}
	return nil
}

func scheme(storeURL string) string {
	s, _, _ := strings.Cut(storeURL, ":")
	return s
}

// backendName is the name of the shared server a store URL names, as
// fault.Backend calls it, or "" for a local store.
func backendName(storeURL string) string {
	switch scheme(storeURL) {
	case "postgres", "postgresql":
		return "postgres"
	case "redis", "rediss":
		return "redis"
	case "mongodb", "mongodb+srv":
		return "mongodb"
	}
	return ""
}

// leftovers lists what a namespace still holds on a shared server.
func leftovers(ctx context.Context, storeURL, ns string) ([]string, error) {
	var left []string
	var err error
	switch scheme(storeURL) {
	case "postgres", "postgresql":
		err = withPostgres(ctx, storeURL, func(c *pgx.Conn) error {
			var n int
			err := c.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", postgres.Schema(ns)).Scan(&n)
			if n > 0 {
				left = append(left, "schema "+postgres.Schema(ns))
			}
			return err
		})
	case "redis", "rediss":
		left, err = fault.RedisKeys(ctx, storeURL, ns, false)
	case "mongodb", "mongodb+srv":
		err = withMongo(ctx, storeURL, func(db *mongo.Database) error {
			left, err = db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: mongoCollections(ns)}}}})
			return err
		})
	}
	return left, err
}

func withPostgres(ctx context.Context, storeURL string, f func(*pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, storeURL)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	return f(c)
}

func withMongo(ctx context.Context, storeURL string, f func(*mongo.Database) error) error {
	c, err := mongo.Connect(options.Client().ApplyURI(storeURL))
	if err != nil {
		return err
	}
	defer c.Disconnect(context.Background())
	name := mongodb.DefaultDatabase
	if u, err := url.Parse(storeURL); err == nil && strings.Trim(u.Path, "/") != "" {
		name = strings.Trim(u.Path, "/")
	}
	return f(c.Database(name))
}

// mongoCollections are the collections of a namespace's sessions, events
// and snapshots (see mongodb.Store.Collections and SnapshotCollection).
func mongoCollections(ns string) []string {
	return []string{ns + ".sessions", ns + ".events", ns + ".snapshots"}
}
