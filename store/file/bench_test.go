package file_test

import (
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// BenchmarkLoad_Tail loads the last 10 events of a session of 30,000
// (a realistic mix of kinds, about 10 MB of log), as cairn.Restore does
// after a recent snapshot; BenchmarkLoad_All loads the whole session, for
// comparison. A tail load costs what its events cost, not what the log
// holds.
func BenchmarkLoad_Tail(b *testing.B) { benchmarkLoad(b, 30000-9, 10) }

func BenchmarkLoad_All(b *testing.B) { benchmarkLoad(b, 1, 30000) }

func benchmarkLoad(b *testing.B, from int64, want int) {
	const total = 30000
	s := openIn(b, b.TempDir(), cairn.StoreOptions{})
	const id = "long"
	if err := s.Create(b.Context(), cairn.SessionMeta{ID: id}); err != nil {
		b.Fatal(err)
	}
	var batch []cairn.Event
	for last := int64(0); last < total; {
		batch = batch[:0]
		for len(batch) < 992 && last+int64(len(batch)) < total {
			n := last + int64(len(batch))
			batch = append(batch, storetest.Conversation(n, "run", "a question")...)
		}
		batch = batch[:min(int64(len(batch)), total-last)]
		if err := s.Append(b.Context(), id, last, batch...); err != nil {
			b.Fatal(err)
		}
		last += int64(len(batch))
	}
	for b.Loop() {
		rec, err := s.Load(b.Context(), id, from)
		if err != nil || len(rec.Events) != want {
			b.Fatalf("Load from %d: %v, %d events, want %d", from, err, len(rec.Events), want)
		}
	}
}
