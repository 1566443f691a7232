package storetest

import (
	"math"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// testSearch checks driver.Searcher: what is indexed, the ranking, one hit
// per session at its best event, the limit, retried appends, a reopen,
// namespaces, and that Delete, expiry and Sweep take a session out.
func testSearch(t *testing.T, h *harness) {
	ctx := t.Context()
	s := h.store(t)
	search := func(s cairn.Store, q string, limit int) []driver.SearchHit {
		t.Helper()
		hits, err := as[driver.Searcher](t, s).Search(ctx, q, limit)
		if err != nil {
			t.Fatalf("Search(%q, %d): %v", q, limit, err)
		}
		return hits
	}
	want := func(what string, got []driver.SearchHit, want ...driver.SearchHit) {
		t.Helper()
		ok := len(got) == len(want)
		for i := 0; ok && i < len(got); i++ {
			ok = got[i].ID == want[i].ID && got[i].Seq == want[i].Seq && got[i].Score > 0
		}
		if !ok {
			t.Errorf("%s: got %v, want %v (IDs and seqs, each with a positive score)", what, got, want)
		}
	}

	a := newSession(t, s, nil)
	mustAppend(t, s, a, 0, Conversation(0, "r1", "find the zebracorn please")...)
	b := newSession(t, s, nil)
	mustAppend(t, s, b, 0, UserTurn(0, "r1", "nothing to see")...)
	c := newSession(t, s, nil)
	mustAppend(t, s, c, 0, UserTurn(0, "r1", "zebracorn zebracorn zebracorn")...)

	// The user message of c holds the word three times in three tokens:
	// it ranks above a's, and above c's own response ("echo: …").
	first := search(s, "zebracorn", 10)
	want("a word in two sessions", first, driver.SearchHit{ID: c, Seq: 2}, driver.SearchHit{ID: a, Seq: 4})
	if len(first) == 2 && first[0].Score <= first[1].Score {
		t.Errorf("scores %v: the first hit's is not above the second's", first)
	}
	want("upper case", search(s, "ZEBRACORN", 10), driver.SearchHit{ID: c, Seq: 2}, driver.SearchHit{ID: a, Seq: 4})
	want("limit 1", search(s, "zebracorn", 1), driver.SearchHit{ID: c, Seq: 2})
	want("two words, one of them in no event", search(s, "zebracorn nosuchword", 10), driver.SearchHit{ID: c, Seq: 2}, driver.SearchHit{ID: a, Seq: 4})
	want("a word in no event", search(s, "nosuchword", 10))
	want("a query without a token", search(s, " !!! -- ", 10))

	// What each kind gives: a tool call's arguments, a tool's output, a
	// compaction's summary, a custom payload; not a system message.
	want("a tool call's argument", search(s, "héllo", 10), driver.SearchHit{ID: a, Seq: 5})
	want("a tool's output", search(s, "appended", 10), driver.SearchHit{ID: a, Seq: 10})
	want("a summary", search(s, "arithmetic", 10), driver.SearchHit{ID: a, Seq: 13})
	want("a custom payload", search(s, "日本", 10), driver.SearchHit{ID: a, Seq: 14})
	want("a system message", search(s, "careful", 10))

	// A retry of an append that landed indexes nothing twice: the same
	// hits with the same scores.
	mustAppend(t, s, c, 0, UserTurn(0, "r1", "zebracorn zebracorn zebracorn")...)
	again := search(s, "zebracorn", 10)
	want("after a retried append", again, driver.SearchHit{ID: c, Seq: 2}, driver.SearchHit{ID: a, Seq: 4})
	for i := range min(len(again), len(first)) {
		if math.Abs(again[i].Score-first[i].Score) > 1e-9*math.Abs(first[i].Score) {
			t.Errorf("hit %d scores %v after a retried append, %v before", i, again[i].Score, first[i].Score)
		}
	}

	// A later append is searchable, and a reopened store finds the same.
	mustAppend(t, s, b, 4, UserTurn(4, "r2", "a wombat at last")...)
	want("a later append", search(s, "wombat", 10), driver.SearchHit{ID: b, Seq: 6})
	want("after a reopen", search(h.store(t), "zebracorn", 10), driver.SearchHit{ID: c, Seq: 2}, driver.SearchHit{ID: a, Seq: 4})

	// Another namespace sees none of these, and they none of its.
	other := h.storeWith(t, cairn.StoreOptions{Namespace: h.ns + "_other"})
	want("another namespace", search(other, "zebracorn", 10))
	o := newSession(t, other, nil)
	mustAppend(t, other, o, 0, UserTurn(0, "r1", "wombat")...)
	want("another namespace's session", search(other, "wombat", 10), driver.SearchHit{ID: o, Seq: 2})
	want("this namespace, after another's append", search(s, "wombat", 10), driver.SearchHit{ID: b, Seq: 6})

	// Delete takes a session out of the index.
	if err := s.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	want("after Delete", search(s, "zebracorn", 10), driver.SearchHit{ID: c, Seq: 2})
	want("after Delete, its argument", search(s, "héllo", 10))
	// A session re-created with a deleted one's ID starts with no text.
	if err := s.Create(ctx, cairn.SessionMeta{ID: a}); err != nil {
		t.Fatal(err)
	}
	want("a re-created ID", search(s, "arithmetic", 10))
	mustAppend(t, s, a, 0, UserTurn(0, "r1", "arithmetic again")...)
	want("a re-created ID's new event", search(s, "arithmetic", 10), driver.SearchHit{ID: a, Seq: 2})

	// An expired session is not found, swept or not.
	const ttl = time.Hour
	ts := h.storeWith(t, cairn.StoreOptions{TTL: ttl})
	d := newSession(t, ts, nil)
	mustAppend(t, ts, d, 0, UserTurn(0, "r1", "quokkafish")...)
	want("before expiry", search(ts, "quokkafish", 10), driver.SearchHit{ID: d, Seq: 2})
	h.clock.Advance(2 * ttl)
	want("after expiry", search(ts, "quokkafish", 10))
	if h.abilities.Sweep {
		if _, err := as[driver.Sweeper](t, ts).Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		want("after Sweep", search(ts, "quokkafish", 10))
	}
}
