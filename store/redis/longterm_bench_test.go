package redis_test

import (
	"context"
	"testing"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/storetest"
)

// BenchmarkLongTerm puts and searches at 1,000 and 10,000 items; see
// lttest.Bench. Each size is a namespace of its own.
func BenchmarkLongTerm(b *testing.B) {
	c := ltClient(b)
	lttest.Bench(b, func(b *testing.B) longterm.Store {
		ns := "ltb_" + testenv.RandHex(6)
		b.Cleanup(func() {
			ctx := context.Background()
			iter := c.Scan(ctx, 0, "cairn:"+ns+":*", 1000).Iterator()
			for iter.Next(ctx) {
				c.Del(ctx, iter.Val())
			}
		})
		s, err := longterm.Open(b.Context(), ltURL(b, ns), longterm.Options{})
		return storetest.Opened(b, s, err)
	})
}
