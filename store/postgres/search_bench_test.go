package postgres_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// rareWord is in one session of BenchmarkSessionSearch's, and in no word
// of internal/words (which has 3 to 8 letters).
const rareWord = "zyzzogetonic"

// BenchmarkSessionSearch searches for a word that one session among
// 1,000 or 10,000 holds. Each session is a turn of four events, three of
// them with text (about 90 words in all, drawn from internal/words), and
// the tables are analysed after the fill (autovacuum may be off).
func BenchmarkSessionSearch(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			s := open(b, cairn.StoreOptions{})
			fillSearch(b, s, n)
			for _, table := range []string{"sessions", "session_text"} {
				if _, err := s.Pool().Exec(b.Context(), "ANALYZE "+pgx.Identifier{s.Schema(), table}.Sanitize()); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				hits, err := s.Search(b.Context(), rareWord, 10)
				if err != nil {
					b.Fatal(err)
				}
				if len(hits) != 1 {
					b.Fatalf("Search(%s) = %v, want the one session that holds it", rareWord, hits)
				}
			}
		})
	}
}

// fillSearch creates n sessions of one turn each, eight writers at once;
// the session in the middle holds rareWord.
func fillSearch(tb testing.TB, s cairn.Store, n int) {
	storetest.FillSearch(tb, s, n, 8, rareWord)
}
