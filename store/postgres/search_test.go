package postgres_test

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/storetest"
)

// checkTotals fails unless the totals of schema's text index are what
// its rows hold.
func checkTotals(t *testing.T, schema string) {
	t.Helper()
	var docs, tokens, wantDocs, wantTokens int64
	err := adminPool(t).QueryRow(t.Context(), `SELECT (SELECT sum(docs) FROM `+pgx.Identifier{schema, "session_text_totals"}.Sanitize()+`),
		(SELECT sum(tokens) FROM `+pgx.Identifier{schema, "session_text_totals"}.Sanitize()+`),
		count(*), coalesce(sum(len), 0) FROM `+pgx.Identifier{schema, "session_text"}.Sanitize()).Scan(&docs, &tokens, &wantDocs, &wantTokens)
	if err != nil {
		t.Fatal(err)
	}
	if docs != wantDocs || tokens != wantTokens {
		t.Errorf("totals: %d events of %d tokens; the index holds %d of %d", docs, tokens, wantDocs, wantTokens)
	}
}

// want is what an in-memory index (ltdriver.Index, FTS5's BM25) finds for
// query among the events of sessions.
func want(sessions map[string][]cairn.Event, query string) []driver.SearchHit {
	x := ltdriver.NewIndex()
	for id, evs := range sessions {
		for _, e := range evs {
			if t := e.SearchText(); len(longterm.Tokens(t)) > 0 {
				x.SetText(id+"\x00"+strconv.FormatInt(e.Seq, 10), t)
			}
		}
	}
	var hits []driver.SearchHit
	for doc, score := range ltdriver.Score([]*ltdriver.Index{x}, longterm.Phrases(query), nil)[x] {
		id, seq, _ := strings.Cut(doc, "\x00")
		n, _ := strconv.ParseInt(seq, 10, 64)
		hits = append(hits, driver.SearchHit{ID: id, Seq: n, Score: score})
	}
	return driver.BestPerSession(hits, 100)
}

func sameHits(t *testing.T, what string, got, want []driver.SearchHit) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].ID == want[i].ID && got[i].Seq == want[i].Seq && math.Abs(got[i].Score-want[i].Score) <= 1e-9*math.Abs(want[i].Score)
	}
	if !ok {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// userTurn is a user message and a response, numbered from last+1.
func userTurn(last int64, user, response string) []cairn.Event {
	return storetest.Number(last,
		cairn.MustEvent(cairn.KindMessageUser, "r", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: user}}}),
		cairn.MustEvent(cairn.KindModelResponse, "r", cairn.ModelResponse{Text: response, Model: "offline"}))
}

// TestStore_SearchScores: Search ranks and scores as the in-memory index
// does (BM25 as FTS5 computes it): single words, phrases, repeated and
// rare words, texts of different lengths.
func TestStore_SearchScores(t *testing.T) {
	s := open(t, cairn.StoreOptions{})
	texts := []struct{ user, response string }{
		{"the teal otter swims in the river", "an otter, teal and small, swims"},
		{"otter otter otter", "teal-otter is a phrase; otter teal is not"},
		{"rivers of the north hold no otters", "none at all in the north"},
		{"a very long text " + strings.Repeat("filler words go here ", 40) + "otter", "short"},
		{"teal", "the river teal otter"},
	}
	sessions := map[string][]cairn.Event{}
	for i, tx := range texts {
		id := "s" + strconv.Itoa(i)
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		evs := userTurn(0, tx.user, tx.response)
		if err := s.Append(t.Context(), id, 0, evs...); err != nil {
			t.Fatal(err)
		}
		sessions[id] = evs
	}
	for _, q := range []string{"otter", "teal-otter", "the river", "teal otter north", "OTTER!", "otters", "filler-words-go", "nosuch"} {
		got, err := s.Search(t.Context(), q, 100)
		if err != nil {
			t.Fatal(err)
		}
		sameHits(t, "search "+q, got, want(sessions, q))
	}
	checkTotals(t, s.Schema())
}

// TestStore_SearchErased: Delete, Sweep and the purge of an expired
// session by Create leave no row of the session in the text index, and
// the totals follow.
func TestStore_SearchErased(t *testing.T) {
	clock := storetest.NewClock()
	s := open(t, cairn.StoreOptions{TTL: time.Hour, Now: clock.Now})
	for _, id := range []string{"deleted", "swept", "purged", "kept"} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(t.Context(), id, 0, userTurn(0, "words of "+id, "more words")...); err != nil {
			t.Fatal(err)
		}
	}
	checkTotals(t, s.Schema())
	if err := s.Delete(t.Context(), "deleted"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Minute)
	if err := s.Append(t.Context(), "kept", 2, userTurn(2, "still here", "yes")...); err != nil {
		t.Fatal(err)
	}
	clock.Advance(45 * time.Minute)
	// An expired session is not found before it is swept.
	if hits, err := s.Search(t.Context(), "swept", 10); err != nil || len(hits) != 0 {
		t.Errorf("Search of an expired session = %v, %v; want no hit", hits, err)
	}
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "purged"}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(t.Context()); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1", n, err)
	}
	for id, want := range map[string]int{"deleted": 0, "swept": 0, "purged": 0, "kept": 4} {
		if got := countRows(t, s, "session_text", "session_id", id); got != want {
			t.Errorf("session %s has %d rows in the text index, want %d", id, got, want)
		}
	}
	checkTotals(t, s.Schema())
	hits, err := s.Search(t.Context(), "words", 10)
	if err != nil || len(hits) != 1 || hits[0].ID != "kept" {
		t.Errorf("Search(words) = %v, %v; want kept alone", hits, err)
	}
}

// TestOpen_IndexesOldSessions opens a schema left at migration 7, before
// the text index, holding sessions written then: migration 8 indexes
// their events, and Search finds them as it finds sessions appended now.
func TestOpen_IndexesOldSessions(t *testing.T) {
	ctx := t.Context()
	ns := "old_" + testenv.RandHex(6)
	schema := postgres.Schema(ns)
	dropSchemaLater(t, ns)
	pool := adminPool(t)
	if err := postgres.MigrateTo(ctx, pool, schema, 7); err != nil {
		t.Fatal(err)
	}
	old := map[string][]cairn.Event{
		"old-a": userTurn(0, "the okapi sleeps", "an okapi, asleep"),
		"old-b": append(userTurn(0, "nothing here", "no"), userTurn(2, "a second okapi turn", "okapi okapi")...),
		"old-c": storetest.Conversation(0, "r", "okapi in a conversation"),
	}
	sessions := pgx.Identifier{schema, "sessions"}.Sanitize()
	events := pgx.Identifier{schema, "events"}.Sanitize()
	for id, evs := range old {
		now := time.Now().UTC()
		if _, err := pool.Exec(ctx, "INSERT INTO "+sessions+" (id, created_at, updated_at, status, last_seq) VALUES ($1, $2, $2, 'completed', $3)",
			id, now, int64(len(evs))); err != nil {
			t.Fatal(err)
		}
		seqs, envs, err := postgres.EncodeAll(evs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, "INSERT INTO "+events+" (session_id, seq, envelope) SELECT $1, * FROM unnest($2::bigint[], $3::bytea[])",
			id, seqs, envs); err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, cairn.StoreOptions{Namespace: ns})
	if got := readMigrations(t, schema); len(got) != migrationCount(t) {
		t.Fatalf("the schema is at %d migrations after Open, want %d", len(got), migrationCount(t))
	}
	checkTotals(t, schema)
	for _, q := range []string{"okapi", "okapi turn", "héllo", "nothing"} {
		got, err := s.Search(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		sameHits(t, "old sessions, search "+q, got, want(old, q))
	}
	// New appends to an old session are indexed beside its old events.
	more := userTurn(2, "the okapi wakes", "okapi")
	if err := s.Append(ctx, "old-a", 2, more...); err != nil {
		t.Fatal(err)
	}
	old["old-a"] = append(old["old-a"], more...)
	got, err := s.Search(ctx, "okapi", 10)
	if err != nil {
		t.Fatal(err)
	}
	sameHits(t, "after an append to an old session", got, want(old, "okapi"))
	checkTotals(t, schema)
}

// TestSearch_IndexPlan: with 20,000 events in the text index and its
// statistics, a search for a rare word reads the GIN index and the
// sessions' primary key, never a whole table.
func TestSearch_IndexPlan(t *testing.T) {
	s := open(t, cairn.StoreOptions{})
	fill(t, s, 5000, 0, time.Time{})
	texts := pgx.Identifier{s.Schema(), "session_text"}.Sanitize()
	if _, err := s.Pool().Exec(t.Context(), `INSERT INTO `+texts+` (session_id, seq, tsv, len)
		SELECT e.session_id, e.seq, ('''w' || (hashtext(e.session_id) & 1023) || ''':1 ''common'':2 ''x' || e.seq || ''':3')::tsvector, 3
		FROM `+pgx.Identifier{s.Schema(), "events"}.Sanitize()+` e`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(t.Context(), "ANALYZE "+texts); err != nil {
		t.Fatal(err)
	}
	q, args := s.SearchQuery("w7 nosuchword")
	plan := explain(t, s, q, args...)
	if strings.Contains(plan, "Seq Scan on session_text t") || strings.Contains(plan, "Seq Scan on sessions") || !strings.Contains(plan, "session_text_tsv") {
		t.Errorf("the plan of a search for a rare word reads a table, not the text index:\n%s", plan)
	}
}

// TestStore_SearchLargeText: an event whose words would make a tsvector
// past PostgreSQL's 1 MB is appended all the same, indexed up to that
// size, and found by its first words.
func TestStore_SearchLargeText(t *testing.T) {
	s := open(t, cairn.StoreOptions{Limits: cairn.Limits{MaxEventBytes: 4 << 20}})
	var b strings.Builder
	for i := range 300000 {
		b.WriteString("w" + strconv.Itoa(i) + " ")
	}
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "big"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), "big", 0, userTurn(0, b.String(), "ok")...); err != nil {
		t.Fatalf("Append of %d bytes of distinct words: %v", b.Len(), err)
	}
	hits, err := s.Search(t.Context(), "w1", 10)
	if err != nil || len(hits) != 1 || hits[0].Seq != 1 {
		t.Errorf("Search(w1) = %v, %v; want big at seq 1", hits, err)
	}
	checkTotals(t, s.Schema())
}
