package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/rediscluster"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// openCluster opens a store on the test cluster through its URL (plus
// extra query parameters), and deletes the namespace's keys on every
// master when the test ends.
func openCluster(tb testing.TB, opts cairn.StoreOptions, extra string) *redis.Store {
	tb.Helper()
	u := rediscluster.URL(tb)
	if opts.Namespace == "" {
		opts.Namespace = "t_" + testenv.RandHex(6)
	}
	s, err := redis.Open(context.Background(), u+extra, opts)
	if err != nil {
		tb.Fatal(err)
	}
	ns := opts.Namespace
	tb.Cleanup(func() {
		s.Close()
		cleanCluster(tb, u, ns)
	})
	return s
}

// TestConformanceCluster runs the conformance suite on a real Redis
// Cluster (3 masters, 3 replicas), reached through a cluster URL.
func TestConformanceCluster(t *testing.T) {
	storetest.Run(t, storetest.Abilities{Leases: true, Claims: true, Sweep: true, Snapshots: true, Search: true}, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		return openCluster(t, opts, "")
	})
}

// TestOpen_ClusterURL checks the cluster URL forms: several addr
// parameters and cluster=true both open a split store on a cluster client
// that sees every master, and the store's sessions spread over them.
func TestOpen_ClusterURL(t *testing.T) {
	u := rediscluster.URL(t)
	seed, _, _ := strings.Cut(u, "?")
	for _, form := range []string{u, seed + "?cluster=true", seed + "/0?cluster=1&dial_timeout=3s"} {
		s, err := redis.Open(t.Context(), form, cairn.StoreOptions{Namespace: "t_" + testenv.RandHex(6)})
		if err != nil {
			t.Fatalf("Open(%s): %v", form, err)
		}
		if _, ok := s.Client().(*goredis.ClusterClient); !ok || s.Kind() != redis.KindCluster {
			t.Errorf("Open(%s): client %T, kind %s, want a cluster client", form, s.Client(), s.Kind())
		}
		top, err := s.Topology(t.Context())
		if err != nil || !strings.Contains(top, "Redis Cluster with 3 masters") {
			t.Errorf("Open(%s).Topology() = %q, %v; want a cluster with 3 masters", form, top, err)
		}
		s.Close()
	}
	ns := "t_" + testenv.RandHex(6)
	s := openCluster(t, cairn.StoreOptions{Namespace: ns}, "")
	cc := s.Client().(*goredis.ClusterClient)
	masters := map[string]bool{}
	for i := range 24 {
		id := "s" + string(rune('a'+i))
		mustCreate(t, s, id)
		mustAppend(t, s, id, 0, storetest.UserTurn(0, "r", "hello")...)
		node, err := cc.MasterForKey(t.Context(), "cairn:"+ns+":{"+ns+":"+id+"}:meta")
		if err != nil {
			t.Fatal(err)
		}
		masters[node.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Errorf("24 sessions' slots are all on %v: want them spread over the masters", masters)
	}
	page, err := s.List(t.Context(), cairn.ListOptions{})
	if err != nil || len(page.Sessions) != 24 {
		t.Fatalf("List: %v; want 24 sessions", err)
	}
}

// TestOpen_StandaloneURLOnClusterNode checks that a standalone URL that
// reaches a cluster node is refused with an error naming the cluster form,
// and that a MOVED reply met through a single-server client says the same.
func TestOpen_StandaloneURLOnClusterNode(t *testing.T) {
	u := rediscluster.URL(t)
	seed, _, _ := strings.Cut(u, "?")
	_, err := redis.Open(t.Context(), seed+"/0", cairn.StoreOptions{})
	if !errors.Is(err, redis.ErrClusterNode) || !strings.Contains(err.Error(), "addr=") {
		t.Fatalf("Open(%s/0): %v, want ErrClusterNode naming the addr form", seed, err)
	}
	opts, err := redis.ParseURL(seed + "/0")
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	defer c.Close()
	s, err := redis.New(c, cairn.StoreOptions{Namespace: "t_" + testenv.RandHex(6)})
	if err != nil {
		t.Fatal(err)
	}
	var moved bool
	for i := range 20 { // some of these IDs hash to a slot of another master
		id := "m" + string(rune('a'+i))
		err := s.Create(t.Context(), cairn.SessionMeta{ID: id})
		if err == nil {
			continue
		}
		moved = true
		if !errors.Is(err, redis.ErrClusterNode) {
			t.Errorf("Create(%s) through a single-server client on a cluster node: %v, want ErrClusterNode", id, err)
		}
	}
	if !moved {
		t.Error("no Create met a MOVED reply: the cluster has one master?")
	}
}

// TestSearch_Cluster checks search on a real cluster, with sessions on
// every master: a word one session holds is found, again after the text
// index is lost (the first Search indexes the namespace again), and its
// hash is on no master once the session is deleted.
func TestSearch_Cluster(t *testing.T) {
	ns := "t_" + testenv.RandHex(6)
	s := openCluster(t, cairn.StoreOptions{Namespace: ns}, "")
	cc := s.Client().(*goredis.ClusterClient)
	var ids []string
	for i := range 24 {
		id := "s" + string(rune('a'+i))
		ids = append(ids, id)
		text := "plain words"
		if i == 17 {
			text = "a quokkafish here"
		}
		mustCreate(t, s, id)
		mustAppend(t, s, id, 0, storetest.UserTurn(0, "r", text)...)
	}
	find := func(what string) {
		t.Helper()
		hits, err := s.Search(t.Context(), "quokkafish", 10)
		if err != nil || len(hits) != 1 || hits[0].ID != "sr" || hits[0].Seq != 2 {
			t.Fatalf("Search %s = %v, %v; want sr's event 2", what, hits, err)
		}
	}
	find("")
	pairs, stats := redis.SearchKeys(s)
	for _, k := range append([]string{pairs, stats}, func() []string {
		var out []string
		for _, id := range ids {
			out = append(out, redis.TermsKey(s, id))
		}
		return out
	}()...) {
		if err := cc.Del(t.Context(), k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	find("after the index was lost")
	if err := s.Delete(t.Context(), "sr"); err != nil {
		t.Fatal(err)
	}
	hash := redis.TokenHash("quokkafish")
	err := cc.ForEachMaster(t.Context(), func(ctx context.Context, c *goredis.Client) error {
		iter := c.Scan(ctx, 0, "cairn:"+ns+":*", 500).Iterator()
		for iter.Next(ctx) {
			if where := rawSearch(t, c, []string{iter.Val()}, []string{hash}); len(where) > 0 {
				t.Errorf("after Delete the word's hash is still in %s", where[0])
			}
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Search(t.Context(), "quokkafish", 10); err != nil || len(hits) != 0 {
		t.Errorf("Search after Delete = %v, %v; want nothing", hits, err)
	}
}

// cleanCluster deletes a namespace's keys on every master.
func cleanCluster(tb testing.TB, u, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	uo, err := redis.ParseStoreURL(u)
	if err != nil {
		tb.Fatal(err)
	}
	cc := goredis.NewClusterClient(uo.Cluster)
	defer cc.Close()
	err = cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		iter := c.Scan(ctx, 0, "cairn:"+ns+":*", 500).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	})
	if err != nil {
		tb.Errorf("clean namespace %s on the cluster: %v", ns, err)
	}
}
