package redis_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// metaReads counts the meta hashes a client reads (HMGET of a :meta key),
// in pipelines too.
type metaReads struct {
	mu sync.Mutex
	n  int
}

func (h *metaReads) count(cmds ...goredis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		if args := c.Args(); strings.EqualFold(c.Name(), "hmget") && len(args) > 1 && strings.HasSuffix(fmt.Sprint(args[1]), ":meta") {
			h.n++
		}
	}
}

func (h *metaReads) take() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.n
	h.n = 0
	return n
}

func (h *metaReads) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h *metaReads) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}
func (h *metaReads) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.count(cmds...)
		return next(ctx, cmds)
	}
}

// countingStore opens a store on its own client, whose meta reads reads
// counts.
func countingStore(t *testing.T, split bool, opts cairn.StoreOptions) (*redis.Store, *metaReads) {
	t.Helper()
	ro, err := redis.ParseURL(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(ro)
	t.Cleanup(func() { c.Close() })
	reads := &metaReads{}
	c.AddHook(reads)
	cleanNamespace(t, opts.Namespace)
	var s *redis.Store
	if split {
		s, err = redis.NewSplit(c, opts)
	} else {
		s, err = redis.New(c, opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s, reads
}

// TestStore_FiltersReadOnlyMatches checks that a prefix, a status or a
// label filter reads the metas of the sessions it matches, not those of
// the namespace: none when nothing matches, one for a rare status.
func TestStore_FiltersReadOnlyMatches(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprint("split=", split), func(t *testing.T) {
			clock := storetest.NewClock()
			s, reads := countingStore(t, split, cairn.StoreOptions{Namespace: "t_" + testenv.RandHex(6), Now: clock.Now})
			for i := range 300 {
				id := fmt.Sprintf("s%03d", i)
				labels := map[string]string{"team": "a"}
				if i == 7 {
					labels = map[string]string{"team": "rare"}
				}
				if err := s.Create(t.Context(), cairn.SessionMeta{ID: id, Labels: labels}); err != nil {
					t.Fatal(err)
				}
				clock.Advance(time.Millisecond)
			}
			mustAppend(t, s, "s100", 0, storetest.Conversation(0, "r", "done")...)
			cases := []struct {
				name  string
				opts  cairn.ListOptions
				want  []string
				reads int
			}{
				{"no status matches", cairn.ListOptions{Status: []cairn.Status{cairn.StatusFailed}}, nil, 0},
				{"a rare status", cairn.ListOptions{Status: []cairn.Status{cairn.StatusCompleted}}, []string{"s100"}, 1},
				{"no label matches", cairn.ListOptions{Labels: map[string]string{"team": "none"}}, nil, 0},
				{"a rare label", cairn.ListOptions{Labels: map[string]string{"team": "rare"}}, []string{"s007"}, 1},
				{"a rare label with a common status", cairn.ListOptions{Status: []cairn.Status{cairn.StatusNew}, Labels: map[string]string{"team": "rare"}}, []string{"s007"}, 1},
				{"no prefix matches", cairn.ListOptions{Prefix: "x"}, nil, 0},
				{"a prefix of one", cairn.ListOptions{Prefix: "s05"}, []string{"s059", "s058", "s057", "s056", "s055", "s054", "s053", "s052", "s051", "s050"}, 10},
			}
			if _, err := s.List(t.Context(), cairn.ListOptions{Prefix: "none"}); err != nil {
				t.Fatal(err) // the side indexes exist already; this only settles the count
			}
			reads.take()
			for _, c := range cases {
				page, err := s.List(t.Context(), c.opts)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				var got []string
				for _, info := range page.Sessions {
					got = append(got, info.ID)
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("%s: got %v, want %v", c.name, got, c.want)
				}
				if n := reads.take(); n != c.reads {
					t.Errorf("%s: read %d metas, want %d", c.name, n, c.reads)
				}
			}
		})
	}
}

// TestStore_SideIndexesBuiltForEarlierStore checks that a namespace
// written before the side indexes existed (none of their keys) lists,
// filters and sweeps correctly: the first call that needs them builds
// them.
func TestStore_SideIndexesBuiltForEarlierStore(t *testing.T) {
	eachMode(t, time.Hour, func(t *testing.T, s *redis.Store, _ string, clock *storetest.Clock) {
		for _, id := range []string{"ab-1", "ab-2", "b"} {
			if err := s.Create(t.Context(), cairn.SessionMeta{ID: id, Labels: map[string]string{"env": id}}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute)
		}
		mustAppend(t, s, "ab-2", 0, storetest.Conversation(0, "r", "q")...)
		clock.Advance(50 * time.Minute)
		mustAppend(t, s, "b", 0, storetest.UserTurn(0, "r", "q")...)
		c := adminClient(t)
		side := redis.SideKeys(s)
		if len(side) == 0 {
			t.Fatal("no side index keys")
		}
		if err := c.Del(t.Context(), side...).Err(); err != nil {
			t.Fatal(err)
		}
		if got := listIDs(t, s, cairn.ListOptions{Prefix: "ab"}); !slices.Equal(got, []string{"ab-2", "ab-1"}) {
			t.Errorf("prefix ab: %v, want [ab-2 ab-1]", got)
		}
		if got := listIDs(t, s, cairn.ListOptions{Status: []cairn.Status{cairn.StatusNew}}); !slices.Equal(got, []string{"ab-1"}) {
			t.Errorf("status new: %v, want [ab-1]", got)
		}
		if got := listIDs(t, s, cairn.ListOptions{Labels: map[string]string{"env": "b"}}); !slices.Equal(got, []string{"b"}) {
			t.Errorf("label env=b: %v, want [b]", got)
		}
		clock.Advance(15 * time.Minute) // ab-1 and ab-2 expired, b lives
		if n, err := s.CountExpired(t.Context()); n != 2 || err != nil {
			t.Errorf("CountExpired = %d, %v; want 2", n, err)
		}
		if n, err := s.Sweep(t.Context()); n != 2 || err != nil {
			t.Errorf("Sweep = %d, %v; want 2", n, err)
		}
		if got := listIDs(t, s, cairn.ListOptions{}); !slices.Equal(got, []string{"b"}) {
			t.Errorf("after Sweep: %v, want [b]", got)
		}
	})
}

// TestStore_SweepInBatches sweeps more expired sessions than one batch
// holds, among live ones, and counts them first.
func TestStore_SweepInBatches(t *testing.T) {
	eachMode(t, time.Hour, func(t *testing.T, s *redis.Store, ns string, clock *storetest.Clock) {
		const expired, live = 350, 40
		storetest.SweepMany(t, s, clock, expired, live)
		if got := len(sessionKeys(t, ns)); got != live {
			t.Errorf("after Sweep %d session keys, want %d (the live sessions' metas)", got, live)
		}
	})
}
