package redis_test

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/rediscluster"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestOpen_SentinelURL opens the store through a Sentinel URL on a local
// master with one replica: it reaches the master, says so, and appends
// that wait for the replica (min_replicas=1) succeed.
func TestOpen_SentinelURL(t *testing.T) {
	sn := rediscluster.TestSentinel(t)
	s, err := redis.Open(t.Context(), sn.URL()+"&min_replicas=1", cairn.StoreOptions{Namespace: "t_" + testenv.RandHex(6)})
	if err != nil {
		t.Fatalf("Open(%s): %v", sn.URL(), err)
	}
	defer s.Close()
	if s.Kind() != redis.KindSentinel {
		t.Errorf("Kind() = %s, want %s", s.Kind(), redis.KindSentinel)
	}
	top, err := s.Topology(t.Context())
	if err != nil || !strings.Contains(top, "through Sentinel (master, 1 replicas connected)") {
		t.Errorf("Topology() = %q, %v; want the master through Sentinel with its replica", top, err)
	}
	mustCreate(t, s, "a")
	evs := storetest.UserTurn(0, "r", "hello")
	mustAppend(t, s, "a", 0, evs...)
	got, err := s.Load(t.Context(), "a", 0)
	if err != nil || len(got.Events) != len(evs) {
		t.Fatalf("Load: %v, want %d events", err, len(evs))
	}
}
