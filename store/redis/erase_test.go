package redis_test

import (
	"context"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/redis"
)

// TestStore_Erasure writes a marker into a session, deletes it, and reads
// every key of the database (strings, lists, hashes, sets, sorted sets) for
// the marker, with and without encryption.
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
			var where []string
			for _, k := range keys(t, "*") {
				if strings.Contains(k, needle) || strings.Contains(strings.Join(values(t, c, k), "\x00"), needle) {
					where = append(where, k)
				}
			}
			return where
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
