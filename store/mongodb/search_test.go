package mongodb_test

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/internal/words"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/mongodb"
	"github.com/cairnhq/cairn/store/storetest"
)

// pair is the same history written to a memory store and to a MongoDB
// store, whose searches must agree.
type pair struct {
	mem   cairn.Store
	mongo *mongodb.Store
}

func newPair(t *testing.T, opts cairn.StoreOptions) pair {
	t.Helper()
	mem, err := memory.NewDB().Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Namespace = "srch_" + testenv.RandHex(5)
	return pair{mem: mem, mongo: openStore(t, opts)}
}

func (p pair) each(t *testing.T, f func(s cairn.Store) error) {
	t.Helper()
	for _, s := range []cairn.Store{p.mem, p.mongo} {
		if err := f(s); err != nil {
			t.Fatalf("%T: %v", s, err)
		}
	}
}

// agree checks that both stores give each query the same hits, with the
// same scores.
func (p pair) agree(t *testing.T, what string, queries ...string) {
	t.Helper()
	for _, q := range queries {
		want, err := p.mem.(driver.Searcher).Search(t.Context(), q, 100)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.mongo.Search(t.Context(), q, 100)
		if err != nil {
			t.Fatalf("%s: Search(%q): %v", what, q, err)
		}
		ok := len(got) == len(want)
		for i := 0; ok && i < len(got); i++ {
			ok = got[i].ID == want[i].ID && got[i].Seq == want[i].Seq &&
				math.Abs(got[i].Score-want[i].Score) <= 1e-9*math.Abs(want[i].Score)
		}
		if !ok {
			t.Errorf("%s: Search(%q)\n got %v\nwant %v (the memory store's)", what, q, got, want)
		}
	}
}

// fill writes n sessions of a few events of made-up prose, with a phrase
// of several tokens in some, to both stores.
func (p pair) fill(t *testing.T, n int) {
	w := words.New(1)
	for i := range n {
		id := fmt.Sprintf("s%03d", i)
		var evs []cairn.Event
		for j := range 3 {
			text := w.Text(5 + (i*7+j*3)%40)
			if (i+j)%5 == 0 {
				text += " teal-otter-17"
			}
			if i%7 == 0 && j == 0 {
				text = "teal otter " + text // the words, not the phrase
			}
			evs = append(evs, storetest.UserTurn(int64(len(evs)), "r", text)...)
		}
		p.each(t, func(s cairn.Store) error {
			if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
				return err
			}
			return s.Append(t.Context(), id, 0, evs...)
		})
	}
}

var pairQueries = []string{"teal-otter-17", "otter", "teal otter", "the", "echo", "zz-nothing", "teal-otter-17 echo"}

// TestSearch_ScoresAsMemory: the store ranks and scores as the memory
// store does (FTS5's BM25 over the namespace), its statistics following
// appends, a retried append, Delete, expiry and Sweep.
func TestSearch_ScoresAsMemory(t *testing.T) {
	clock := storetest.NewClock()
	p := newPair(t, cairn.StoreOptions{TTL: time.Hour, Now: clock.Now})
	p.fill(t, 40)
	p.agree(t, "filled", pairQueries...)

	evs := storetest.UserTurn(12, "r", "otter teal-otter-17 otter")
	p.each(t, func(s cairn.Store) error { return s.Append(t.Context(), "s003", 12, evs...) })
	p.each(t, func(s cairn.Store) error { return s.Append(t.Context(), "s003", 12, evs...) })
	p.agree(t, "an append and its retry", pairQueries...)

	for _, id := range []string{"s000", "s005", "s010"} {
		p.each(t, func(s cairn.Store) error { return s.Delete(t.Context(), id) })
	}
	p.agree(t, "after Delete", pairQueries...)

	// All but two expire; the memory store drops them at once, this one
	// at Sweep.
	clock.Advance(50 * time.Minute)
	for _, id := range []string{"s001", "s002"} {
		p.each(t, func(s cairn.Store) error {
			return s.Append(t.Context(), id, 12, storetest.UserTurn(12, "r", "late otter")...)
		})
	}
	clock.Advance(20 * time.Minute)
	p.each(t, func(s cairn.Store) error { _, err := s.(driver.Sweeper).Sweep(t.Context()); return err })
	p.agree(t, "after Sweep", pairQueries...)
}

// TestSearch_OlderEvents: event documents written before the text index
// (no entry, no statistics) are indexed when a store is next opened on
// the namespace, and searched as if they had been indexed when written.
func TestSearch_OlderEvents(t *testing.T) {
	p := newPair(t, cairn.StoreOptions{})
	p.fill(t, 30)
	p.agree(t, "filled", pairQueries...)
	// A lease document lives beside the events, and is no event.
	if _, err := p.mongo.Acquire(t.Context(), "s001", "worker", time.Minute); err != nil {
		t.Fatal(err)
	}

	db := client(t)
	_, events := p.mongo.Collections()
	if _, err := db.Collection(events).UpdateMany(t.Context(), bson.D{},
		bson.D{{Key: "$unset", Value: bson.D{{Key: "toks", Value: ""}, {Key: "tf", Value: ""}, {Key: "tlen", Value: ""}}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Collection(p.mongo.SearchCollection()).Drop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if hits, err := p.mongo.Search(t.Context(), "otter", 10); err != nil || len(hits) > 0 {
		t.Fatalf("Search with the index removed = %v, %v; want nothing", hits, err)
	}

	// Stores opened at once: one indexes, the others do not wait for it.
	ns := strings.TrimSuffix(events, ".events")
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			s, err := mongodb.Open(t.Context(), serverURI(t), cairn.StoreOptions{Namespace: ns})
			if err != nil {
				t.Error(err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	s, err := mongodb.Open(t.Context(), serverURI(t), cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	p.mongo = s
	p.agree(t, "reopened", pairQueries...)
	n, err := db.Collection(events).CountDocuments(t.Context(), bson.D{{Key: "seq", Value: bson.D{{Key: "$lt", Value: 0}}}, {Key: "tlen", Value: bson.D{{Key: "$exists", Value: true}}}})
	if err != nil || n != 0 {
		t.Errorf("lease documents given an index entry: %d, %v; want none", n, err)
	}
}

// BenchmarkSessionSearch searches for a word that one session among N
// holds, N = 1,000 and 10,000 sessions of two runs each (eight events,
// four with text: two user messages of 30 and 20 made-up words, and the
// model's echoes). The sessions are written straight into the
// collections (Fill), a thousand documents an insert: through Create and
// Append, 10,000 sessions take many minutes on FerretDB.
func BenchmarkSessionSearch(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			s := openStore(b, cairn.StoreOptions{Namespace: "srchb_" + testenv.RandHex(4)})
			vocab := words.New(1)
			sessions := map[string][]cairn.Event{}
			for i := range n {
				text := vocab.Text(30)
				if i == n/2 {
					text += " quetzalcoatlus"
				}
				sessions[fmt.Sprintf("b%05d", i)] = append(storetest.UserTurn(0, "r", text), storetest.UserTurn(4, "r", vocab.Text(20))...)
			}
			if err := s.Fill(b.Context(), sessions); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				hits, err := s.Search(b.Context(), "quetzalcoatlus", 10)
				if err != nil || len(hits) != 1 || hits[0].ID != fmt.Sprintf("b%05d", n/2) {
					b.Fatalf("Search = %v, %v; want one hit", hits, err)
				}
			}
		})
	}
}
