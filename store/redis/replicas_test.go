package redis_test

import (
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestMinReplicas_NoReplicas checks that on a server without replicas an
// append with min_replicas=1 is applied but answers a *ReplicaError that
// wraps cairn.ErrUnavailable, and that sending it again writes nothing
// twice and answers the same.
func TestMinReplicas_NoReplicas(t *testing.T) {
	ns := "t_" + testenv.RandHex(6)
	cleanNamespace(t, ns)
	s, err := redis.Open(t.Context(), testURL(t)+"?min_replicas=1&replica_timeout=100ms", cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustCreate(t, s, "a")
	evs := storetest.UserTurn(0, "r", "hello")
	for range 2 {
		t0 := time.Now()
		err := s.Append(t.Context(), "a", 0, evs...)
		re, ok := errors.AsType[*redis.ReplicaError](err)
		if !ok || !errors.Is(err, cairn.ErrUnavailable) || re.Want != 1 || re.Got != 0 {
			t.Fatalf("Append with min_replicas=1 and no replica: %v, want a ReplicaError 0 of 1 wrapping ErrUnavailable", err)
		}
		if d := time.Since(t0); d < 100*time.Millisecond {
			t.Errorf("Append answered in %s, before the replica timeout", d)
		}
	}
	got, err := s.Load(t.Context(), "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != len(evs) {
		t.Errorf("Load: %d events, want the %d appended once", len(got.Events), len(evs))
	}
	// A lease holder's append waits too.
	lease, err := s.Acquire(t.Context(), "a", "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(evs))
	err = s.AppendFenced(t.Context(), "a", lease, n, storetest.Custom(n+1, "fenced"))
	if re, ok := errors.AsType[*redis.ReplicaError](err); !ok || re.Got != 0 {
		t.Errorf("AppendFenced with min_replicas=1 and no replica: %v, want a ReplicaError 0 of 1", err)
	}
}

// TestMinReplicas_Cluster checks that on the cluster an append with
// min_replicas=1 returns once the replica of its slot holds it (read there
// at once), and that asking for more replicas than a master has answers a
// *ReplicaError.
func TestMinReplicas_Cluster(t *testing.T) {
	ns := "t_" + testenv.RandHex(6)
	s := openCluster(t, cairn.StoreOptions{Namespace: ns}, "&min_replicas=1")
	cc := s.Client().(*goredis.ClusterClient)
	for i := range 6 {
		id := "w" + string(rune('a'+i))
		mustCreate(t, s, id)
		evs := storetest.UserTurn(0, "r", "hello")
		mustAppend(t, s, id, 0, evs...)
		key := "cairn:" + ns + ":{" + ns + ":" + id + "}:events"
		shards, err := cc.ClusterShards(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		slot, err := cc.ClusterKeySlot(t.Context(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, sh := range shards {
			if len(sh.Slots) == 0 || !inSlots(sh.Slots, slot) {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role == "master" {
					continue
				}
				r := goredis.NewClient(&goredis.Options{Addr: n.IP + ":" + itoa(n.Port)})
				// A replica of a cluster answers reads of its slots in READONLY mode.
				if err := r.Do(t.Context(), "readonly").Err(); err != nil {
					t.Fatal(err)
				}
				got, err := r.LLen(t.Context(), key).Result()
				r.Close()
				if err != nil {
					t.Fatalf("LLEN on replica %s:%d: %v", n.IP, n.Port, err)
				}
				if got != int64(len(evs)) {
					t.Errorf("replica %s:%d holds %d events of %s after the append returned, want %d", n.IP, n.Port, got, id, len(evs))
				}
				checked++
			}
		}
		if checked == 0 {
			t.Fatalf("no replica found for slot %d", slot)
		}
	}
	two := openCluster(t, cairn.StoreOptions{Namespace: ns}, "&min_replicas=2&replica_timeout=100ms")
	n := int64(len(storetest.UserTurn(0, "r", "hello")))
	err := two.Append(t.Context(), "wa", n, storetest.Custom(n+1, "more"))
	if re, ok := errors.AsType[*redis.ReplicaError](err); !ok || re.Got != 1 {
		t.Errorf("Append with min_replicas=2 on masters of one replica: %v, want a ReplicaError 1 of 2", err)
	}
}

func inSlots(rs []goredis.SlotRange, slot int64) bool {
	for _, r := range rs {
		if r.Start <= slot && slot <= r.End {
			return true
		}
	}
	return false
}

func itoa(n int64) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int64) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}
