package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairnhq/cairn/internal/words"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/sqlite"
)

// filled holds the files fillLongTerm filled, by size and spread, for the
// runs of one benchmark.
var filled sync.Map

// benchFile returns the path of the file filled under key, and true; or,
// when none is, the path of a new file in a folder of its own, and false.
func benchFile(b *testing.B, key string) (string, bool) {
	b.Helper()
	if path, found := filled.Load(key); found {
		return path.(string), true
	}
	dir, err := os.MkdirTemp("", "cairn-bench-")
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, "cairn.db"), false
}

// fillLongTerm puts n items of 10 to 30 words into spread namespaces (one
// namespace when spread is 1) and returns the store, opened with
// synchronous NORMAL to fill faster (a search reads the same either way).
// The file is filled once per process and reopened after.
func fillLongTerm(b *testing.B, n, spread int) *sqlite.LongTerm {
	b.Helper()
	key := fmt.Sprint(n, "/", spread)
	path, found := benchFile(b, key)
	s, err := sqlite.OpenLongTerm(b.Context(), path, sqlite.LongTermOptions{Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if found {
		return s
	}
	filled.Store(key, path)
	w := words.New(7)
	for i := range n {
		it := longterm.Item{Namespace: fmt.Sprintf("users/u%d", i%spread), Key: fmt.Sprint("k", i), Text: w.Text(10 + i%21)}
		if _, err := s.Put(context.Background(), it, longterm.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkLongTermSearch searches by text at 1,000 and 100,000 items:
// everything, and one namespace of 1,000 items among a hundred. A query
// is two words of middling frequency (ranks 200 to 2,000 of 20,000).
func BenchmarkLongTermSearch(b *testing.B) {
	for _, c := range []struct {
		n, spread int
		prefix    string
	}{{1000, 1, "users"}, {100000, 1, "users"}, {100000, 100, "users/u7"}} {
		b.Run(fmt.Sprintf("items=%d/namespaces=%d/prefix=%s", c.n, c.spread, c.prefix), func(b *testing.B) {
			s := fillLongTerm(b, c.n, c.spread)
			w := words.New(7)
			found := 0
			b.ResetTimer()
			for b.Loop() {
				q := w.Query()
				rs, err := s.Search(b.Context(), longterm.SearchOptions{Query: q, Prefix: c.prefix})
				if err != nil {
					b.Fatal(err)
				}
				found += len(rs)
			}
			b.ReportMetric(float64(found)/float64(b.N), "results/op")
		})
	}
}

// BenchmarkLongTermSearchWord searches all of 100,000 items for one word,
// from the most frequent of the vocabulary (rank 0, held by most items)
// to one of rank 1,000, with a put into the file before each search (not
// timed), as `cairn bench --memory` does: a reader reads again the pages
// it needs after any write.
func BenchmarkLongTermSearchWord(b *testing.B) {
	for _, rank := range []int{0, 10, 100, 1000} {
		b.Run(fmt.Sprintf("items=100000/rank=%d", rank), func(b *testing.B) {
			s := fillLongTerm(b, 100000, 1)
			w := words.New(7)
			q := w.At(rank)
			i := 0
			for b.Loop() {
				b.StopTimer()
				it := longterm.Item{Namespace: "bench/put", Key: fmt.Sprint("p", i%100), Text: w.Text(20)}
				if _, err := s.Put(b.Context(), it, longterm.PutOptions{}); err != nil {
					b.Fatal(err)
				}
				i++
				b.StartTimer()
				if _, err := s.Search(b.Context(), longterm.SearchOptions{Query: q, Prefix: "users", Limit: 10}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLongTermPut puts items of 20 words, with the default durable
// commits, beside BenchmarkAppend's session appends on the same kind of
// file.
func BenchmarkLongTermPut(b *testing.B) {
	s, err := sqlite.OpenLongTerm(b.Context(), filepath.Join(b.TempDir(), "cairn.db"), sqlite.LongTermOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w := words.New(7)
	i := 0
	for b.Loop() {
		it := longterm.Item{Namespace: "users/ada", Key: fmt.Sprint("k", i%5000), Text: w.Text(20)}
		if _, err := s.Put(b.Context(), it, longterm.PutOptions{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	filled.Range(func(_, path any) bool {
		os.RemoveAll(filepath.Dir(path.(string)))
		return true
	})
	os.Exit(code)
}
