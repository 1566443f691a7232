package lttest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cairnhq/cairn/internal/words"
	"github.com/cairnhq/cairn/longterm"
)

// Bench runs a store's put and search benchmarks at 1,000 and 10,000
// items, each size on the store open returns (a memory of its own),
// filled with items of 10 to 30 words of cairn bench's vocabulary in ten
// namespaces under "users". A search asks for two words of middling
// frequency under "users"; a put replaces an item, so that the memory
// keeps its size.
func Bench(b *testing.B, open func(b *testing.B) longterm.Store) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			s := open(b)
			fill(b, s, n)
			b.Run("op=search", func(b *testing.B) {
				w := words.New(7)
				found := 0
				for b.Loop() {
					rs, err := s.Search(b.Context(), longterm.SearchOptions{Query: w.Query(), Prefix: "users"})
					if err != nil {
						b.Fatal(err)
					}
					found += len(rs)
				}
				b.ReportMetric(float64(found)/float64(b.N), "results/op")
			})
			b.Run("op=put", func(b *testing.B) {
				w := words.New(9)
				i := 0
				for b.Loop() {
					it := longterm.Item{Namespace: fmt.Sprintf("users/u%d", i%10), Key: fmt.Sprint("k", i%n), Text: w.Text(20)}
					if _, err := s.Put(b.Context(), it, longterm.PutOptions{}); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
	}
}

// fill puts n items of 10 to 30 words into ten namespaces under "users",
// from eight writers at once.
func fill(b *testing.B, s longterm.Store, n int) {
	b.Helper()
	texts := make([]string, n)
	w := words.New(7)
	for i := range texts {
		texts[i] = w.Text(10 + i%21)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				it := longterm.Item{Namespace: fmt.Sprintf("users/u%d", i%10), Key: fmt.Sprint("k", i), Text: texts[i]}
				if _, err := s.Put(context.Background(), it, longterm.PutOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}
