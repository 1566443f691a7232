package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/internal/words"
)

// BenchOpener opens a store for a benchmark, registering its Close with
// b.Cleanup.
type BenchOpener func(b *testing.B, opts cairn.StoreOptions) cairn.Store

// BenchHistoryLengths are the history lengths BenchmarkAppend measures at.
var BenchHistoryLengths = []int{10, 10000}

// BenchmarkAppend measures appending one ~1 KB event to a session whose
// history already holds 10 and 10,000 events, as sub-benchmarks
// "history=N". Besides ns/op it reports the median and 99th percentile of
// single appends ("p50-µs", "p99-µs"): the figures to compare across
// lengths, since the cost of an append must not grow with the history.
func BenchmarkAppend(b *testing.B, open BenchOpener) {
	for _, n := range BenchHistoryLengths {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			s := open(b, cairn.StoreOptions{Namespace: "bench_" + testenv.RandHex(4)})
			id := "bench-" + testenv.RandHex(6)
			if err := s.Create(b.Context(), cairn.SessionMeta{ID: id}); err != nil {
				b.Fatal(err)
			}
			last := Prefill(b, s, id, n)
			durs := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				e := Padded(last+1, 1024)
				t0 := time.Now()
				if err := s.Append(b.Context(), id, last, e); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(t0))
				last++
			}
			b.StopTimer()
			ReportPercentiles(b, durs)
		})
	}
}

// Prefill appends n ~1 KB events to a session in batches and returns the
// last seq.
func Prefill(tb testing.TB, s cairn.Store, id string, n int) int64 {
	tb.Helper()
	var last int64
	for last < int64(n) {
		k := min(500, int64(n)-last)
		evs := make([]cairn.Event, k)
		for i := range evs {
			evs[i] = Padded(last+int64(i)+1, 1024)
		}
		if err := s.Append(tb.Context(), id, last, evs...); err != nil {
			tb.Fatalf("prefill at seq %d: %v", last, err)
		}
		last += k
	}
	return last
}

// ReportPercentiles reports the median and 99th percentile of durs in
// microseconds as the metrics "p50-µs" and "p99-µs".
func ReportPercentiles(b *testing.B, durs []time.Duration) {
	if len(durs) == 0 {
		return
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(durs[len(durs)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// FillSearch writes n sessions of one user turn each (storetest.UserTurn
// with 30 words drawn by frequency), from writers goroutines at once;
// session n/2's message also holds rare, which no other session has. The
// backends' search benchmarks search for it.
func FillSearch(tb testing.TB, s cairn.Store, n, writers int, rare string) {
	tb.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			vocab := words.New(uint64(w))
			for i := w; i < n; i += writers {
				id := fmt.Sprintf("s%06d", i)
				text := vocab.Text(30)
				if i == n/2 {
					text += " " + rare
				}
				err := s.Create(tb.Context(), cairn.SessionMeta{ID: id})
				if err == nil {
					err = s.Append(tb.Context(), id, 0, UserTurn(0, "r1", text)...)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatalf("fill %d sessions: %v", n, err)
	}
}
