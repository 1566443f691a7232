//go:build linux || darwin

package file_test

import (
	"fmt"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/file"
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

// BenchmarkList lists a store of 500 sessions of 16 events each, whose
// files List reads one session at a time: info.json, the log's length,
// meta.json and ack.json.
func BenchmarkList(b *testing.B) {
	s := openIn(b, b.TempDir(), cairn.StoreOptions{})
	for i := range 500 {
		id := fmt.Sprintf("s%03d", i)
		if err := s.Create(b.Context(), cairn.SessionMeta{ID: id}); err != nil {
			b.Fatal(err)
		}
		if err := s.Append(b.Context(), id, 0, storetest.Conversation(0, "run", "a question")...); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		page, err := s.List(b.Context(), cairn.ListOptions{Limit: 1000})
		if err != nil || len(page.Sessions) != 500 {
			b.Fatalf("List: %v, %d sessions, want 500", err, len(page.Sessions))
		}
	}
}

// BenchmarkSessionSearch searches a namespace of 1,000 and of 10,000
// sessions (two turns each, 60 words drawn from internal/words) for a
// word that one of them holds. "warm" is a store's later searches, which
// read the feed and score in memory; "cold" a store's first, which reads
// every session's info and search.jsonl.
func BenchmarkSessionSearch(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			const rare = "zebracornium"
			fillSessions(b, dir, n, rare)
			search := func(b *testing.B, s *file.Store) {
				hits, err := s.Search(b.Context(), rare, 10)
				if err != nil || len(hits) != 1 {
					b.Fatalf("Search(%s) = %v, %v; want one hit", rare, hits, err)
				}
			}
			b.Run("warm", func(b *testing.B) {
				s := openIn(b, dir, cairn.StoreOptions{})
				search(b, s)
				for b.Loop() {
					search(b, s)
				}
			})
			b.Run("cold", func(b *testing.B) {
				for b.Loop() {
					s, err := file.Open(b.Context(), dir, cairn.StoreOptions{})
					if err != nil {
						b.Fatal(err)
					}
					search(b, s)
					s.Close()
				}
			})
		})
	}
}

// fillSessions writes n sessions into the store in dir, from 32
// goroutines at once (their appends share the journal's syncs), the one
// in the middle with the word rare in its message.
func fillSessions(b testing.TB, dir string, n int, rare string) {
	s := openIn(b, dir, cairn.StoreOptions{})
	storetest.FillSearch(b, s, n, 32, rare)
	s.Close()
}
