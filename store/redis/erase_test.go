package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_Erasure writes a marker into a session, deletes it, and reads
// every key of the database (strings, lists, hashes, sets, sorted sets) for
// the marker, with and without encryption. The text index names tokens by
// their hashes: the search looks for the hash of the marker's own token too
// (see rawNeedles), so that an index entry left behind is found.
func TestStore_Erasure(t *testing.T) {
	url := testenv.URL(t, testenv.Redis)
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	keys := func(t *testing.T, pattern string) []string {
		var out []string
		ctx := context.Background() // also at cleanup, after t.Context ends
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			out = append(out, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	crypttest.Run(t, crypttest.Backend{
		URL: url,
		Raw: func(t *testing.T, needle string) []string {
			return rawSearch(t, c, keys(t, "*"), rawNeedles(needle))
		},
		Drop: func(t *testing.T, ns string) {
			for _, k := range keys(t, "*"+ns+"*") {
				if err := c.Del(context.Background(), k).Err(); err != nil {
					t.Errorf("drop %s: %v", k, err)
				}
			}
		},
	})
}

// values reads a key's whole value, whatever its type.
func values(t *testing.T, c *goredis.Client, key string) []string {
	ctx := t.Context()
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	switch typ {
	case "string":
		v, err := c.Get(ctx, key).Result()
		if err != nil && err != goredis.Nil {
			t.Fatal(err)
		}
		vals = []string{v}
	case "list":
		vals, err = c.LRange(ctx, key, 0, -1).Result()
	case "hash":
		var m map[string]string
		m, err = c.HGetAll(ctx, key).Result()
		for k, v := range m {
			vals = append(vals, k, v)
		}
	case "set":
		vals, err = c.SMembers(ctx, key).Result()
	case "zset":
		vals, err = c.ZRange(ctx, key, 0, -1).Result()
	default: // gone meanwhile, or a type the store never writes
	}
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// rawNeedles returns needle and the index hash of each of its tokens that
// is long enough to be its own (a marker's random part, not "cairn").
func rawNeedles(needle string) []string {
	out := []string{needle}
	for _, tok := range longterm.Tokens(needle) {
		if len(tok) >= 8 {
			out = append(out, redis.TokenHash(tok))
		}
	}
	return out
}

// rawSearch returns the keys among keys whose name or value holds one of
// needles.
func rawSearch(t *testing.T, c *goredis.Client, keys, needles []string) []string {
	var where []string
	for _, k := range keys {
		all := k + "\x00" + strings.Join(values(t, c, k), "\x00")
		for _, n := range needles {
			if strings.Contains(all, n) {
				where = append(where, k)
				break
			}
		}
	}
	return where
}

// TestStore_SearchErasure checks, on both index modes, that a session's
// entries in the text index are gone from every key of its namespace
// after Delete, after Sweep of the expired session, and after a Create
// over the expired session, and that they were in the index before (the
// postings and the pairs of token and session), so the search could see
// them.
func TestStore_SearchErasure(t *testing.T) {
	cases := []struct {
		name  string
		erase func(t *testing.T, s *redis.Store, clock *storetest.Clock)
	}{
		{"Delete", func(t *testing.T, s *redis.Store, _ *storetest.Clock) {
			if err := s.Delete(t.Context(), "gone"); err != nil {
				t.Fatal(err)
			}
		}},
		{"Sweep", func(t *testing.T, s *redis.Store, clock *storetest.Clock) {
			clock.Advance(45 * time.Minute) // gone expired, kept lives
			if n, err := s.Sweep(t.Context()); n != 1 || err != nil {
				t.Fatalf("Sweep = %d, %v; want 1", n, err)
			}
		}},
		{"Recreate", func(t *testing.T, s *redis.Store, clock *storetest.Clock) {
			clock.Advance(45 * time.Minute)
			mustCreate(t, s, "gone")
		}},
	}
	c := adminClient(t)
	for _, m := range modes {
		for _, tc := range cases {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				ns := "t_" + testenv.RandHex(6)
				clock := storetest.NewClock()
				s := m.open(t, cairn.StoreOptions{Namespace: ns, TTL: time.Hour, Now: clock.Now})
				marker := crypttest.Marker()
				hash := rawNeedles(marker)[1]
				mustCreate(t, s, "gone")
				mustAppend(t, s, "gone", 0, storetest.UserTurn(0, "r", "the "+marker)...)
				clock.Advance(30 * time.Minute)
				mustCreate(t, s, "kept")
				mustAppend(t, s, "kept", 0, storetest.UserTurn(0, "r", "the same words")...)
				pairs, _ := redis.SearchKeys(s)
				index := []string{redis.TermsKey(s, "gone"), pairs}
				if where := rawSearch(t, c, index, []string{hash}); len(where) != len(index) {
					t.Fatalf("the marker's hash is in %v before the erasure, want %v", where, index)
				}
				tc.erase(t, s, clock)
				if where := rawSearch(t, c, namespaceKeys(t, t.Context(), ns), rawNeedles(marker)); len(where) > 0 {
					t.Errorf("after %s the marker or its hash is still in %s", tc.name, strings.Join(where, ", "))
				}
			})
		}
	}
}
