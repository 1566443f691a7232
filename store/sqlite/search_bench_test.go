package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/words"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

// rareWord is in one session of those fillSessions writes.
const rareWord = "quokkafish7"

// fillSessions writes n sessions of a user turn (4 events, two of them
// with text: a message of 10 to 30 words and its echo), one of them
// holding rareWord, and returns the store, opened with synchronous NORMAL
// to fill faster (a search reads the same either way). Eight writers
// append at once, sharing commits. The file is filled once per process
// and reopened after each fill and for each run.
func fillSessions(b *testing.B, n int) *sqlite.Store {
	b.Helper()
	key := fmt.Sprint("sessions/", n)
	path, found := filled.Load(key)
	if !found {
		dir, err := os.MkdirTemp("", "cairn-bench-")
		if err != nil {
			b.Fatal(err)
		}
		path = filepath.Join(dir, "cairn.db")
	}
	s, err := sqlite.Open(b.Context(), path.(string), sqlite.Options{Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if found {
		return s
	}
	filled.Store(key, path)
	const writers = 8
	var (
		wg   sync.WaitGroup
		errs = make([]error, writers)
	)
	for w := range writers {
		wg.Go(func() {
			vocab := words.New(uint64(w))
			for i := w; i < n && errs[w] == nil; i += writers {
				id := fmt.Sprintf("s%06d", i)
				text := vocab.Text(10 + i%21)
				if i == n/2 {
					text += " " + rareWord
				}
				if err := s.Create(context.Background(), cairn.SessionMeta{ID: id}); err != nil {
					errs[w] = err
					break
				}
				errs[w] = s.Append(context.Background(), id, 0, storetest.UserTurn(0, "r1", text)...)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	// Searched as a reopened file is: its log checkpointed.
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if s, err = sqlite.Open(b.Context(), path.(string), sqlite.Options{Synchronous: "NORMAL"}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkSessionSearch searches for a word that one session among
// 1,000 and 10,000 holds: the cost must follow the events that match, not
// the number of sessions.
func BenchmarkSessionSearch(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			s := fillSessions(b, n)
			b.ResetTimer()
			for b.Loop() {
				hits, err := s.Search(b.Context(), rareWord, 10)
				if err != nil {
					b.Fatal(err)
				}
				if len(hits) != 1 {
					b.Fatalf("Search(%q) = %v, want one session", rareWord, hits)
				}
			}
		})
	}
}
