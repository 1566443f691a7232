package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/redis"
)

// BenchmarkLongTerm puts and searches at 1,000 and 10,000 items; see
// benchLongTerm. Each size is a namespace of its own.
func BenchmarkLongTerm(b *testing.B) {
	opts, err := redis.ParseURL(testenv.URL(b, testenv.Redis))
	if err != nil {
		b.Fatal(err)
	}
	c := goredis.NewClient(opts)
	b.Cleanup(func() { c.Close() })
	benchLongTerm(b, func(b *testing.B) longterm.Store {
		ns := "ltb_" + testenv.RandHex(6)
		b.Cleanup(func() {
			ctx := context.Background()
			iter := c.Scan(ctx, 0, "cairn:"+ns+":*", 1000).Iterator()
			for iter.Next(ctx) {
				c.Del(ctx, iter.Val())
			}
		})
		s, err := longterm.Open(b.Context(), testenv.URL(b, testenv.Redis)+"?namespace="+ns, longterm.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// benchWords is a vocabulary of made-up words, drawn with a Zipf law as
// the words of prose are (as store/sqlite's benchmarks draw them).
type benchWords struct {
	words []string
	zipf  *rand.Zipf
}

func newBenchWords(seed uint64) *benchWords {
	r := rand.New(rand.NewPCG(seed, 1))
	w := &benchWords{zipf: rand.NewZipf(r, 1.1, 2, 19999)}
	for range 20000 {
		var b strings.Builder
		for range 3 + r.IntN(6) {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		w.words = append(w.words, b.String())
	}
	return w
}

func (w *benchWords) text(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = w.words[w.zipf.Uint64()]
	}
	return strings.Join(out, " ")
}

// fillLongTerm puts n items of 10 to 30 words into ten namespaces under
// "users", from eight writers at once.
func fillLongTerm(b *testing.B, s longterm.Store, n int) {
	b.Helper()
	texts := make([]string, n)
	w := newBenchWords(7)
	for i := range texts {
		texts[i] = w.text(10 + i%21)
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
				w := newBenchWords(7)
				r := rand.New(rand.NewPCG(3, 3))
				found := 0
				for b.Loop() {
					q := w.words[200+r.IntN(1800)] + " " + w.words[200+r.IntN(1800)]
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
				w := newBenchWords(9)
				i := 0
				for b.Loop() {
					it := longterm.Item{Namespace: fmt.Sprintf("users/u%d", i%10), Key: fmt.Sprint("k", i%n), Text: w.text(20)}
					if _, err := s.Put(b.Context(), it, longterm.PutOptions{}); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
	}
}
