package mongodb_test

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
	db := client(b)
	lttest.Bench(b, func(b *testing.B) longterm.Store {
		ns := "ltb_" + testenv.RandHex(6)
		b.Cleanup(func() {
			for _, n := range []string{ns + ".longterm", ns + ".longterm_meta"} {
				_ = db.Collection(n).Drop(context.Background())
			}
		})
		s, err := longterm.Open(b.Context(), ltURL(b, ns), longterm.Options{})
		return storetest.Opened(b, s, err)
	})
}
