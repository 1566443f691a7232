package redis_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/rediscluster"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

const envURL = "CAIRN_TEST_REDIS"

// testURL returns the test server's URL, or skips the test.
func testURL(tb testing.TB) string {
	tb.Helper()
	return testenv.URL(tb, envURL) // e.g. redis://127.0.0.1:6379/0
}

var (
	adminOnce sync.Once
	admin     *goredis.Client
	adminErr  error
)

// adminClient returns a client on the test server for looking at keys and
// cleaning up, shared by the whole test binary.
func adminClient(tb testing.TB) *goredis.Client {
	tb.Helper()
	u := testURL(tb)
	adminOnce.Do(func() {
		var opts *goredis.Options
		if opts, adminErr = redis.ParseURL(u); adminErr == nil {
			admin = goredis.NewClient(opts)
		}
	})
	if adminErr != nil {
		tb.Fatal(adminErr)
	}
	return admin
}

func TestMain(m *testing.M) {
	testenv.QuickRaceExit()
	testenv.Examples(testenv.Redis, "REDIS_URL")
	code := m.Run()
	testenv.ReportSkips("store/redis")
	if admin != nil {
		admin.Close()
	}
	rediscluster.StopShared()
	os.Exit(code)
}

// namespaceKeys returns every key of a namespace, found with SCAN.
func namespaceKeys(tb testing.TB, ctx context.Context, ns string) []string {
	tb.Helper()
	var keys []string
	iter := adminClient(tb).Scan(ctx, 0, "cairn:"+ns+":*", 500).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		tb.Fatalf("scan %s: %v", ns, err)
	}
	return keys
}

// cleanNamespace deletes every key of ns when the test ends.
func cleanNamespace(tb testing.TB, ns string) {
	c := adminClient(tb)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if keys := namespaceKeys(tb, ctx, ns); len(keys) > 0 {
			if err := c.Del(ctx, keys...).Err(); err != nil {
				tb.Errorf("clean namespace %s: %v", ns, err)
			}
		}
	})
}

// openStore opens a store on the test server that owns its client, and
// deletes its namespace's keys when the test ends.
func openStore(tb testing.TB, opts cairn.StoreOptions) *redis.Store {
	tb.Helper()
	if opts.Namespace == "" {
		opts.Namespace = "t_" + testenv.RandHex(6)
	}
	cleanNamespace(tb, opts.Namespace)
	s, err := redis.Open(context.Background(), testURL(tb), opts)
	return storetest.Opened(tb, s, err)
}

// conformanceAbilities are the store's, with the hook that reads its envelopes.
var conformanceAbilities = storetest.Abilities{Leases: true, Claims: true, Sweep: true, Snapshots: true, Search: true,
	Envelopes: func(t *testing.T, s cairn.Store, id string) [][]byte {
		raw, err := adminClient(t).LRange(t.Context(), redis.EventsKey(s.(*redis.Store), id), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		envs := make([][]byte, len(raw))
		for i, r := range raw {
			envs[i] = []byte(r)
		}
		return envs
	},
	DeleteEvent: func(t *testing.T, s cairn.Store, id string, seq int64) {
		// The element at the seq's position, replaced by a mark and the
		// mark removed: LREM by value, as a person at redis-cli would.
		key, c := redis.EventsKey(s.(*redis.Store), id), adminClient(t)
		if err := c.LSet(t.Context(), key, seq-1, "deleted by the test").Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.LRem(t.Context(), key, 1, "deleted by the test").Err(); err != nil {
			t.Fatal(err)
		}
	}}

func TestConformance(t *testing.T) {
	testURL(t)
	storetest.Run(t, conformanceAbilities, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		return openStore(t, opts)
	})
}

// TestConformanceSplit runs the suite on stores that update the namespace
// index outside the session scripts, as they do on Redis Cluster.
func TestConformanceSplit(t *testing.T) {
	c := adminClient(t)
	storetest.Run(t, conformanceAbilities, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		cleanNamespace(t, opts.Namespace)
		s, err := redis.NewSplit(c, opts)
		return storetest.Opened(t, s, err)
	})
}

func BenchmarkAppend(b *testing.B) {
	storetest.BenchmarkAppend(b, func(b *testing.B, opts cairn.StoreOptions) cairn.Store {
		return openStore(b, opts)
	})
}
