package redis_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// modes opens stores of both index modes: in the scripts (a single
// server) and after them (Redis Cluster).
var modes = []struct {
	name string
	open func(t *testing.T, opts cairn.StoreOptions) *redis.Store
}{
	{"joint", func(t *testing.T, opts cairn.StoreOptions) *redis.Store { return openStore(t, opts) }},
	{"split", func(t *testing.T, opts cairn.StoreOptions) *redis.Store {
		cleanNamespace(t, opts.Namespace)
		s, err := redis.NewSplit(adminClient(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// eachMode runs f as a subtest for each of modes, on a store of that mode
// in a namespace ns of its own, with sessions that live ttl (0: forever)
// by clock.
func eachMode(t *testing.T, ttl time.Duration, f func(t *testing.T, s *redis.Store, ns string, clock *storetest.Clock)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			clock := storetest.NewClock()
			ns := "t_" + testenv.RandHex(6)
			f(t, m.open(t, cairn.StoreOptions{Namespace: ns, TTL: ttl, Now: clock.Now}), ns, clock)
		})
	}
}

func listIDs(t *testing.T, s cairn.Store, opts cairn.ListOptions) []string {
	t.Helper()
	var out []string
	for range 1000 {
		page, err := s.List(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Sessions) > driver.PageSize(opts) {
			t.Fatalf("page of %d sessions, limit %d", len(page.Sessions), driver.PageSize(opts))
		}
		for _, info := range page.Sessions {
			out = append(out, info.ID)
		}
		if page.Next == "" {
			return out
		}
		opts.Cursor = page.Next
	}
	t.Fatal("List cursor never ended")
	return nil
}

// TestStore_ListManyBatches pages through more sessions than one index
// batch holds, with a filter that only a few match, ties in updated time
// included, and sees each session once, in order.
func TestStore_ListManyBatches(t *testing.T) {
	eachMode(t, 0, func(t *testing.T, s *redis.Store, _ string, clock *storetest.Clock) {
		var all, picked []string
		for i := range 300 {
			// IDs fall as time rises, and several sessions share each
			// microsecond (the index's resolution): within one, the
			// index orders them against List order.
			id := fmt.Sprintf("s%03d", 999-i)
			var labels map[string]string
			if i%7 == 0 {
				labels = map[string]string{"pick": "yes"}
			}
			if err := s.Create(t.Context(), cairn.SessionMeta{ID: id, Labels: labels}); err != nil {
				t.Fatal(err)
			}
			all = append([]string{id}, all...)
			if i%7 == 0 {
				picked = append([]string{id}, picked...)
			}
			if i%5 != 0 { // some pairs share an updated time exactly
				clock.Advance(300 * time.Nanosecond)
			}
		}
		// Same updated time: higher ID first, as the list order says.
		want := slices.Clone(all)
		sortByTimeThenID(t, s, want)
		if got := listIDs(t, s, cairn.ListOptions{Limit: 10}); !slices.Equal(got, want) {
			t.Fatalf("paged list of %d sessions differs from the expected order of %d", len(got), len(want))
		}
		wantPicked := slices.DeleteFunc(slices.Clone(want), func(id string) bool { return !slices.Contains(picked, id) })
		if got := listIDs(t, s, cairn.ListOptions{Limit: 4, Labels: map[string]string{"pick": "yes"}}); !slices.Equal(got, wantPicked) {
			t.Fatalf("filtered list = %v\nwant %v", got, wantPicked)
		}
	})
}

// sortByTimeThenID puts ids in List order using the stores' own infos.
func sortByTimeThenID(t *testing.T, s cairn.Store, ids []string) {
	t.Helper()
	infos := make([]cairn.SessionInfo, len(ids))
	for i, id := range ids {
		rec, err := s.Load(t.Context(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		infos[i] = rec.Info
	}
	driver.SortInfos(infos)
	for i, info := range infos {
		ids[i] = info.ID
	}
}

// TestStore_ListRepairsIndex checks that List drops index entries of
// sessions that are gone, and (split) repairs a score that disagrees with
// the session.
func TestStore_ListRepairsIndex(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			clock := storetest.NewClock()
			ns := "t_" + testenv.RandHex(6)
			s := m.open(t, cairn.StoreOptions{Namespace: ns, Now: clock.Now})
			c := adminClient(t)
			index := "cairn:" + ns + ":sessions"
			for _, id := range []string{"old", "mid", "new"} {
				mustCreate(t, s, id)
				clock.Advance(time.Second)
			}
			if err := c.ZAdd(t.Context(), index, goredis.Z{Score: 1e15, Member: "ghost"}).Err(); err != nil {
				t.Fatal(err)
			}
			if m.name == "split" {
				// An index update lost to a crash: the score is older than
				// the session's updated time.
				if err := c.ZAdd(t.Context(), index, goredis.Z{Score: 1, Member: "new"}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := listIDs(t, s, cairn.ListOptions{}), []string{"new", "mid", "old"}; !slices.Equal(got, want) {
				t.Fatalf("List = %v, want %v", got, want)
			}
			members, err := c.ZRangeWithScores(t.Context(), index, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, z := range members {
				got = append(got, z.Member.(string))
			}
			if want := []string{"old", "mid", "new"}; !slices.Equal(got, want) {
				t.Errorf("index after List = %v, want %v (ghost dropped, scores right)", got, want)
			}
		})
	}
}

// TestStore_Sweep checks that Sweep deletes exactly the expired sessions,
// keys and index entries, counts them, and drops the index entries of a
// session whose keys Redis deleted.
func TestStore_Sweep(t *testing.T) {
	eachMode(t, time.Hour, func(t *testing.T, s *redis.Store, ns string, clock *storetest.Clock) {
		c := adminClient(t)
		index := "cairn:" + ns + ":sessions"
		for _, id := range []string{"a", "b", "live", "ghost"} {
			mustCreate(t, s, id)
		}
		mustAppend(t, s, "b", 0, storetest.UserTurn(0, "r", "hi")...)
		clock.Advance(30 * time.Minute)
		mustAppend(t, s, "live", 0, storetest.Custom(1, "x"))
		clock.Advance(45 * time.Minute)
		// ghost's keys are gone as if Redis had deleted them on their
		// TTL: its index entries dangle.
		if err := c.Del(t.Context(), redis.MetaKey(s, "ghost"), redis.EventsKey(s, "ghost")).Err(); err != nil {
			t.Fatal(err)
		}
		n, err := s.Sweep(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("Sweep = %d, want 2", n)
		}
		if keys := sessionKeys(t, ns); len(keys) != 3 {
			t.Errorf("keys after Sweep = %v, want live's meta, events and postings", keys)
		}
		pairs, stats := redis.SearchKeys(s)
		members, err := c.ZRange(t.Context(), pairs, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members {
			if !strings.HasSuffix(m, ":live") && !strings.HasPrefix(m, "s:live:") {
				t.Errorf("%s after Sweep holds %q, want live's pairs only", pairs, m)
			}
		}
		fields, err := c.HKeys(t.Context(), stats).Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(fields)
		if want := []string{"l:live", "len", "n", "n:live", "ready"}; !slices.Equal(fields, want) {
			t.Errorf("%s after Sweep has fields %v, want %v", stats, fields, want)
		}
		members, err = c.ZRange(t.Context(), index, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(members, []string{"live"}) {
			t.Errorf("index after Sweep = %v, want [live]", members)
		}
		for _, key := range redis.SideKeys(s) {
			members, err := c.ZRange(t.Context(), key, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			if members = slices.DeleteFunc(members, func(m string) bool { return m == "" }); len(members) > 0 && !slices.Equal(members, []string{"live"}) {
				t.Errorf("%s after Sweep = %v, want [live] or nothing", key, members)
			}
		}
		if n, err := s.Sweep(t.Context()); n != 0 || err != nil {
			t.Errorf("second Sweep = %d, %v; want 0, nil", n, err)
		}
	})
}

// TestStore_ListBatchBoundary puts three matching sessions that share one
// microsecond (the index's resolution) across the end of List's first
// index batch. Within a score the index orders them by ID, against List
// order, so List must read the next batch before it can tell which comes
// first.
func TestStore_ListBatchBoundary(t *testing.T) {
	eachMode(t, 0, func(t *testing.T, s *redis.Store, _ string, clock *storetest.Clock) {
		pick := map[string]string{"pick": "yes"}
		for _, id := range []string{"c", "b", "a"} { // created in this order
			if err := s.Create(t.Context(), cairn.SessionMeta{ID: id, Labels: pick}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(100 * time.Nanosecond)
		}
		for i := range 62 { // newer, so scanned first
			clock.Advance(time.Microsecond)
			mustCreate(t, s, fmt.Sprintf("n%02d", i))
		}
		got := listIDs(t, s, cairn.ListOptions{Limit: 1, Labels: pick})
		if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
			t.Fatalf("List = %v, want %v (most recently updated first)", got, want)
		}
	})
}
