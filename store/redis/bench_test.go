package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/storetest"
)

// BenchmarkFloor measures, on the same server and in the same run as
// BenchmarkAppend, what Redis costs before the store adds anything: a bare
// RPUSH of a 1 KB value, and an EVALSHA of a script that does the same
// RPUSH. Compare their p50-µs with BenchmarkAppend's.
func BenchmarkFloor(b *testing.B) {
	c := adminClient(b)
	key := "cairn:bench_" + testenv.RandHex(6) + ":floor"
	b.Cleanup(func() { c.Del(context.Background(), key) })
	val := strings.Repeat("x", 1024)
	push := goredis.NewScript(`return redis.call('RPUSH', KEYS[1], ARGV[1])`)
	cases := []struct {
		name string
		do   func() error
	}{
		{"rpush", func() error { return c.RPush(b.Context(), key, val).Err() }},
		{"evalsha-rpush", func() error { return push.Run(b.Context(), c, []string{key}, val).Err() }},
	}
	for _, cs := range cases {
		b.Run(cs.name, func(b *testing.B) {
			durs := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t0 := time.Now()
				if err := cs.do(); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(t0))
			}
			storetest.ReportPercentiles(b, durs)
		})
	}
}
