package redis_test

import (
	"context"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn/internal/testing/rediscluster"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// ltClient returns a client of the test's own on the test server.
func ltClient(tb testing.TB) *goredis.Client {
	tb.Helper()
	opts, err := redis.ParseURL(testenv.URL(tb, testenv.Redis))
	if err != nil {
		tb.Fatal(err)
	}
	c := goredis.NewClient(opts)
	tb.Cleanup(func() { c.Close() })
	return c
}

// ltKeys returns the keys of a namespace's long-term memory.
func ltKeys(t testing.TB, c *goredis.Client, ns string) []string {
	t.Helper()
	var out []string
	ctx := context.Background() // also at cleanup, after t.Context ends
	iter := c.Scan(ctx, 0, "cairn:"+ns+":*", 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// dropLater deletes a namespace's keys when the test ends.
func dropLater(t testing.TB, c *goredis.Client, ns string) {
	t.Cleanup(func() {
		for _, k := range ltKeys(t, c, ns) {
			c.Del(context.Background(), k)
		}
	})
}

// ltNamespace returns a new namespace named with a prefix, whose keys
// are deleted when the test ends.
func ltNamespace(t testing.TB, c *goredis.Client, prefix string) string {
	ns := prefix + testenv.RandHex(6)
	dropLater(t, c, ns)
	return ns
}

// ltURL is the test server's URL with a namespace parameter.
func ltURL(tb testing.TB, ns string) string {
	return withNamespace(testenv.URL(tb, testenv.Redis), ns)
}

// withNamespace is URL u with a namespace parameter.
func withNamespace(u, ns string) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "namespace=" + ns
}

// runLongTerm runs the suite with stores that open opens by URL, each test
// on a namespace of its own.
func runLongTerm(t *testing.T, open func(ctx context.Context, url string, opts longterm.Options) (longterm.Store, error)) {
	c := ltClient(t)
	lttest.RunByURL(t, lttest.Abilities{Sweep: true}, func(t *testing.T) string { return ltURL(t, ltNamespace(t, c, "lt_")) }, open)
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
// key of the namespace (names and whole values, whatever their type) for
// them, in clear and encrypted.
func TestLongTerm_Erasure(t *testing.T) {
	c := ltClient(t)
	ns := ltNamespace(t, c, "lter_")
	crypttest.RunLongTerm(t, crypttest.LongTermBackend{
		URL: ltURL(t, ns),
		Raw: func(t *testing.T, needle string) []string {
			var where []string
			for _, k := range ltKeys(t, c, ns) {
				if strings.Contains(k, needle) || strings.Contains(strings.Join(values(t, c, k), "\x00"), needle) {
					where = append(where, k)
				}
			}
			return where
		},
	})
}

// TestLongTerm_OneSlot checks that every key of a namespace's long-term
// memory hashes to one Cluster slot, so that its scripts run on Cluster.
func TestLongTerm_OneSlot(t *testing.T) {
	c := ltClient(t)
	ns := ltNamespace(t, c, "lt_")
	s, err := longterm.Open(t.Context(), ltURL(t, ns), longterm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, k := range []string{"a", "b"} {
		if _, err := s.Put(t.Context(), longterm.Item{Namespace: "x/" + k, Key: k, Text: "some words " + k}, longterm.PutOptions{TTL: 3600e9}); err != nil {
			t.Fatal(err)
		}
	}
	keys := ltKeys(t, c, ns)
	if len(keys) < 6 {
		t.Fatalf("keys %q: want the items, paths, exp, stats, rev and token sets", keys)
	}
	// A key's slot is the CRC16 of its hash tag: the text between its first
	// { and the next }, when not empty (Redis Cluster's rule).
	tags := map[string][]string{}
	for _, k := range keys {
		open := strings.IndexByte(k, '{')
		end := strings.IndexByte(k[open+1:], '}')
		if open < 0 || end <= 0 {
			t.Fatalf("key %q has no hash tag", k)
		}
		tag := k[open+1 : open+1+end]
		tags[tag] = append(tags[tag], k)
	}
	if len(tags) != 1 {
		t.Errorf("keys under %d hash tags: %v", len(tags), tags)
	}
}

// TestLongTerm_ScoresAsMemory: the store's BM25 and the memory backend's
// give one corpus the same scores and order.
func TestLongTerm_ScoresAsMemory(t *testing.T) {
	lttest.ScoresAsMemory(t, openScored(t))
}

// openScored opens a store on a namespace of its own.
func openScored(t *testing.T) longterm.Store {
	s, err := longterm.Open(t.Context(), ltURL(t, ltNamespace(t, ltClient(t), "lt_")), longterm.Options{})
	return storetest.Opened(t, s, err)
}

// TestLongTermConformanceCluster runs the long-term memory suite on a real
// Redis Cluster (3 masters, 3 replicas), reached through a cluster URL:
// every script's keys are in the namespace's one slot.
func TestLongTermConformanceCluster(t *testing.T) {
	u := rediscluster.URL(t)
	namespace := storetest.PerTest(func(t *testing.T) string {
		ns := "lt_" + testenv.RandHex(6)
		t.Cleanup(func() { cleanCluster(t, u, ns) })
		return ns
	})
	lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
		ns := namespace(t)
		s, err := longterm.Open(t.Context(), withNamespace(u, ns), opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.(*redis.LongTerm).KeyPrefix(); !strings.Contains(got, "{"+ns+"/longterm}") {
			t.Fatalf("key prefix %q", got)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestLongTerm_SessionNamespaces: the memories of three session
// namespaces on one server keep apart.
func TestLongTerm_SessionNamespaces(t *testing.T) {
	c := ltClient(t)
	var scopes [3]string
	for i := range scopes {
		scopes[i] = ltNamespace(t, c, "ltns_")
	}
	lttest.SessionNamespacesByURL(t, scopes, ltURL)
}

// BenchmarkLongTerm puts and searches at 1,000 and 10,000 items; see
// lttest.Bench. Each size is a namespace of its own.
func BenchmarkLongTerm(b *testing.B) {
	c := ltClient(b)
	lttest.Bench(b, func(b *testing.B) longterm.Store {
		s, err := longterm.Open(b.Context(), ltURL(b, ltNamespace(b, c, "ltb_")), longterm.Options{})
		return storetest.Opened(b, s, err)
	})
}
