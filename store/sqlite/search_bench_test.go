package sqlite_test

import (
	"fmt"
	"testing"

	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

// rareWord is in one session of those fillSessions writes.
const rareWord = "quokkafish7"

// fillSessions writes n sessions of a user turn (storetest.FillSearch),
// one of them holding rareWord, and returns the store, opened with synchronous NORMAL
// to fill faster (a search reads the same either way). Eight writers
// append at once, sharing commits. The file is filled once per process
// and reopened after each fill and for each run.
func fillSessions(b *testing.B, n int) *sqlite.Store {
	b.Helper()
	key := fmt.Sprint("sessions/", n)
	path, found := benchFile(b, key)
	s, err := sqlite.Open(b.Context(), path, sqlite.Options{Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if found {
		return s
	}
	filled.Store(key, path)
	storetest.FillSearch(b, s, n, 8, rareWord)
	// Searched as a reopened file is: its log checkpointed.
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if s, err = sqlite.Open(b.Context(), path, sqlite.Options{Synchronous: "NORMAL"}); err != nil {
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
