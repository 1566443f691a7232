package redis_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_EventsListDamaged removes events from a session's events list
// by hand (its last element, as RPOP does, or one in the middle, as LREM
// does), on a plain store and on a split one. Before, Load returned the 11
// events left as the whole history, and Append at the last seq pushed seq
// 13 at the 12th position, over the gap; now Load, Append and AppendFenced
// each answer a *driver.DamagedError naming the list, and nothing is
// pushed.
func TestStore_EventsListDamaged(t *testing.T) {
	for _, split := range []bool{false, true} {
		for _, how := range []string{"last", "middle"} {
			t.Run(map[bool]string{false: "plain", true: "split"}[split]+"/"+how, func(t *testing.T) {
				opts := cairn.StoreOptions{Namespace: "t_" + testenv.RandHex(6)}
				var s *redis.Store
				if split {
					cleanNamespace(t, opts.Namespace)
					var err error
					if s, err = redis.NewSplit(adminClient(t), opts); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
				} else {
					s = openStore(t, opts)
				}
				const id = "hit"
				mustCreate(t, s, id)
				evs := make([]cairn.Event, 12)
				for i := range evs {
					evs[i] = storetest.Custom(int64(i+1), "an event")
				}
				mustAppend(t, s, id, 0, evs...)
				c, key := adminClient(t), redis.EventsKey(s, id)
				var err error
				if how == "last" {
					err = c.RPop(t.Context(), key).Err()
				} else {
					if err = c.LSet(t.Context(), key, 4, "gone").Err(); err == nil {
						err = c.LRem(t.Context(), key, 1, "gone").Err()
					}
				}
				if err != nil {
					t.Fatal(err)
				}

				isDamage := func(err error) bool {
					d, ok := errors.AsType[*driver.DamagedError](err)
					return ok && d.Session == id && strings.Contains(d.Where, key) && !cairn.IsUnavailable(err)
				}
				if rec, err := s.Load(t.Context(), id, 0); !isDamage(err) {
					t.Errorf("Load = %v, want a *driver.DamagedError naming %s", err, key)
					if err == nil {
						t.Errorf("Load returned %d events, to last seq %d", len(rec.Events), rec.Info.LastSeq)
					}
				}
				if err := s.Append(t.Context(), id, 12, storetest.Custom(13, "over the gap")); !isDamage(err) {
					t.Errorf("Append at seq 12 = %v, want a *driver.DamagedError naming %s", err, key)
				}
				lease, err := s.Acquire(t.Context(), id, "w1", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.AppendFenced(t.Context(), id, lease, 12, storetest.Custom(13, "over the gap")); !isDamage(err) {
					t.Errorf("AppendFenced at seq 12 = %v, want a *driver.DamagedError naming %s", err, key)
				}
				if n, err := c.LLen(t.Context(), key).Result(); err != nil || n != 11 {
					t.Errorf("the list holds %d events (%v), want the 11 left", n, err)
				}
			})
		}
	}
}
