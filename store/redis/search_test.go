package redis_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// search runs s.Search and fails the test on an error.
func search(t *testing.T, s *redis.Store, q string) []driver.SearchHit {
	t.Helper()
	hits, err := s.Search(t.Context(), q, 10)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	return hits
}

// sameHits reports whether got and want name the same events with the
// same scores.
func sameHits(got, want []driver.SearchHit) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].ID != want[i].ID || got[i].Seq != want[i].Seq || math.Abs(got[i].Score-want[i].Score) > 1e-9*math.Abs(want[i].Score) {
			return false
		}
	}
	return true
}

// forget removes the text index of a namespace, as a namespace written by
// the version of the store before it has none.
func forget(t *testing.T, s *redis.Store, ids ...string) {
	t.Helper()
	pairs, stats := redis.SearchKeys(s)
	keys := []string{pairs, stats}
	for _, id := range ids {
		keys = append(keys, redis.TermsKey(s, id))
	}
	if err := adminClient(t).Del(t.Context(), keys...).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestStore_SearchOldSessions checks that sessions written before the text
// index existed are found: the first Search indexes the namespace, once,
// with the same statistics as if every event had been indexed as it was
// appended, also when some events were appended after the upgrade.
func TestStore_SearchOldSessions(t *testing.T) {
	queries := []string{"wombat", "zebracorn", "green-tea", "tea"}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			write := func(s *redis.Store, upgrade func()) {
				mustCreate(t, s, "a")
				mustAppend(t, s, "a", 0, storetest.Conversation(0, "r1", "a wombat drinks green tea")...)
				mustCreate(t, s, "b")
				mustAppend(t, s, "b", 0, storetest.UserTurn(0, "r1", "zebracorn and tea, green")...)
				mustCreate(t, s, "c")
				upgrade()
				mustAppend(t, s, "b", 4, storetest.UserTurn(4, "r2", "green-tea wombat")...)
			}
			want := m.open(t, cairn.StoreOptions{Namespace: "t_" + testenv.RandHex(6)})
			write(want, func() {})
			ns := "t_" + testenv.RandHex(6)
			old := m.open(t, cairn.StoreOptions{Namespace: ns})
			write(old, func() { forget(t, old, "a", "b", "c") })
			s := m.open(t, cairn.StoreOptions{Namespace: ns})
			for _, q := range queries {
				w := search(t, want, q)
				if len(w) == 0 {
					t.Fatalf("Search(%q) found nothing in the namespace written with the index", q)
				}
				if got := search(t, s, q); !sameHits(got, w) {
					t.Errorf("Search(%q) after the upgrade = %v, want %v", q, got, w)
				}
			}
			// Indexed once: another store, another search, the same.
			again := m.open(t, cairn.StoreOptions{Namespace: ns})
			if got, w := search(t, again, "wombat"), search(t, want, "wombat"); !sameHits(got, w) {
				t.Errorf("Search(wombat) from another store = %v, want %v", got, w)
			}
		})
	}
}

// TestStore_SearchExpiredUnswept checks that a session whose keys Redis
// has not deleted yet is not found once expired on the store's clock.
func TestStore_SearchExpiredUnswept(t *testing.T) {
	eachMode(t, time.Hour, func(t *testing.T, s *redis.Store, _ string, clock *storetest.Clock) {
		mustCreate(t, s, "old")
		mustAppend(t, s, "old", 0, storetest.UserTurn(0, "r", "quokkafish")...)
		clock.Advance(40 * time.Minute)
		mustCreate(t, s, "new")
		mustAppend(t, s, "new", 0, storetest.UserTurn(0, "r", "quokkafish again")...)
		clock.Advance(30 * time.Minute)
		if got := search(t, s, "quokkafish"); len(got) != 1 || got[0].ID != "new" {
			t.Errorf("Search = %v, want new's event alone", got)
		}
	})
}

// BenchmarkSessionSearch searches a word that one session among N holds,
// at N = 1,000 and 10,000 sessions of four events of made-up prose each:
// the cost must follow the sessions the word is in, not N.
func BenchmarkSessionSearch(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			s := openStore(b, cairn.StoreOptions{Namespace: "bench_" + testenv.RandHex(4)})
			fillSearch(b, s, n)
			b.ResetTimer()
			for b.Loop() {
				hits, err := s.Search(b.Context(), "quokkafish", 10)
				if err != nil || len(hits) != 1 {
					b.Fatalf("Search = %v, %v; want one hit", hits, err)
				}
			}
		})
	}
}

// fillSearch writes n sessions of a user turn each, from 16 writers at
// once; session n/2 holds the rare word.
func fillSearch(b *testing.B, s *redis.Store, n int) {
	storetest.FillSearch(b, s, n, 16, "quokkafish")
}
