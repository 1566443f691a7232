package mongodb_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn/internal/bench"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
)

// BenchmarkLongTerm puts and searches at 1,000 and 10,000 items; see
// benchLongTerm. Each size is a namespace of its own.
func BenchmarkLongTerm(b *testing.B) {
	db := client(b)
	benchLongTerm(b, func(b *testing.B) longterm.Store {
		ns := "ltb_" + testenv.RandHex(6)
		b.Cleanup(func() {
			for _, n := range []string{ns + ".longterm", ns + ".longterm_meta"} {
				_ = db.Collection(n).Drop(context.Background())
			}
		})
		u := serverURI(b)
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		s, err := longterm.Open(b.Context(), u+sep+"namespace="+ns, longterm.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// fillLongTerm puts n items of 10 to 30 words into ten namespaces under
// "users", from eight writers at once.
func fillLongTerm(b *testing.B, s longterm.Store, n int) {
	b.Helper()
	texts := make([]string, n)
	w := bench.NewWords(7)
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

// benchLongTerm runs the put and search benchmarks at 1,000 and 10,000
// items on the stores open returns (each on a memory of its own).
func benchLongTerm(b *testing.B, open func(b *testing.B) longterm.Store) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			s := open(b)
			fillLongTerm(b, s, n)
			b.Run("op=search", func(b *testing.B) {
				w := bench.NewWords(7)
				found := 0
				for b.Loop() {
					q := w.Query()
					rs, err := s.Search(b.Context(), longterm.SearchOptions{Query: q, Prefix: "users"})
					if err != nil {
						b.Fatal(err)
					}
					found += len(rs)
				}
				b.ReportMetric(float64(found)/float64(b.N), "results/op")
			})
			b.Run("op=put", func(b *testing.B) {
				// Replaces the items, one after the other: the memory
				// keeps its size.
				w := bench.NewWords(9)
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
