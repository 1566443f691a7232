package postgres_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/words"
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
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			vocab := words.New(uint64(w))
			for i := w; i < n; i += writers {
				id := fmt.Sprintf("s-%06d", i)
				user := vocab.Text(20)
				if i == n/2 {
					user += " " + rareWord
				}
				evs := storetest.Number(0,
					cairn.MustEvent(cairn.KindRunStarted, "r", cairn.RunStarted{RunID: "r", Agent: "bench", Model: "offline"}),
					cairn.MustEvent(cairn.KindMessageUser, "r", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: user}}}),
					cairn.MustEvent(cairn.KindModelResponse, "r", cairn.ModelResponse{Text: vocab.Text(40), Model: "offline"}),
					cairn.MustEvent(cairn.KindToolResult, "r", cairn.ToolResult{CallID: "c1", Name: "lookup", Output: vocab.Text(30)}))
				if err := s.Create(tb.Context(), cairn.SessionMeta{ID: id}); err != nil {
					errs <- err
					return
				}
				if err := s.Append(tb.Context(), id, 0, evs...); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatalf("fill: %v", err)
	}
}
