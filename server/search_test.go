package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/store/storetest"
)

// searchFixture writes three sessions: two hold "lisbon" (one of them
// twice, in a labelled session), one does not.
func searchFixture(t *testing.T, st cairn.Store) {
	t.Helper()
	for _, s := range []struct{ id, team, text string }{
		{"trip-1", "travel", "Book a flight to Lisbon <soon>"},
		{"trip-2", "ops", "Lisbon, Lisbon and Porto"},
		{"other", "ops", "Nothing about cities"},
	} {
		if err := st.Create(t.Context(), cairn.SessionMeta{ID: s.id, Labels: map[string]string{"team": s.team}}); err != nil {
			t.Fatal(err)
		}
		if err := st.Append(t.Context(), s.id, 0, storetest.UserTurn(0, "r1", s.text)...); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAPI_Search(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	searchFixture(t, h.store)
	var out struct {
		Results []foundJSON `json:"results"`
	}
	r := h.do("GET", "/api/search?q=LISBON", nil)
	wantStatus(t, "search", r, http.StatusOK)
	r.Decode(t, &out)
	if len(out.Results) != 2 || out.Results[0].Session.ID != "trip-2" || out.Results[1].Session.ID != "trip-1" {
		t.Fatalf("results %+v, want trip-2 then trip-1", out.Results)
	}
	first := out.Results[0]
	if first.Seq != 2 || first.Kind != cairn.KindMessageUser || first.Snippet != "Lisbon, Lisbon and Porto" || first.Score <= out.Results[1].Score || first.Session.Labels["team"] != "ops" {
		t.Errorf("first result %+v", first)
	}

	r = h.do("GET", "/api/search?q=lisbon&label=team=travel", nil)
	wantStatus(t, "search with a label", r, http.StatusOK)
	r.Decode(t, &out)
	if len(out.Results) != 1 || out.Results[0].Session.ID != "trip-1" {
		t.Errorf("team travel: %+v", out.Results)
	}
	r = h.do("GET", "/api/search?q=lisbon&status=failed", nil)
	r.Decode(t, &out)
	if len(out.Results) != 0 {
		t.Errorf("status failed: %+v", out.Results)
	}
	r = h.do("GET", "/api/search?q=lisbon&limit=1", nil)
	r.Decode(t, &out)
	if len(out.Results) != 1 || out.Results[0].Session.ID != "trip-2" {
		t.Errorf("limit 1: %+v", out.Results)
	}

	for _, bad := range []struct{ query, field string }{
		{"", "q"}, {"q=+", "q"}, {"q=x&limit=101", "limit"}, {"q=x&status=bogus", "status"},
		{"q=x&status=incomplete", "status"}, {"q=x&label=team", "label"}, {"q=x&updated_after=yesterday", "updated_after"},
	} {
		r := h.do("GET", "/api/search?"+bad.query, nil)
		wantStatus(t, bad.query, r, http.StatusBadRequest)
		if got := r.Err(t)["field"]; got != bad.field {
			t.Errorf("%s: field %v, want %s", bad.query, got, bad.field)
		}
	}
	r = newHarness(t, noSearch{testcheck.MemoryStore(t)}, Config{}).do("GET", "/api/search?q=x", nil)
	wantStatus(t, "a store without search", r, http.StatusNotImplemented)
	if got := r.Err(t)["code"]; got != "no_search" {
		t.Errorf("code %v, want no_search", got)
	}
}

func TestUI_Search(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	searchFixture(t, h.store)
	_, _, page := browse(t, h)
	if body := page("/sessions"); !strings.Contains(body, `name="text"`) {
		t.Error("the sessions page has no box for words")
	}
	body := page("/sessions?text=" + url.QueryEscape("lisbon <script>"))
	for _, want := range []string{
		`<table class="sessions" id="found">`,
		`href="/sessions/trip-2?from=1&amp;at=2#seq-2"`, `#2 message.user`,
		`<mark>Lisbon</mark>, <mark>Lisbon</mark> and Porto`,
		`Book a flight to <mark>Lisbon</mark> &lt;soon&gt;`,
		`value="lisbon &lt;script&gt;"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the search page lacks %s", want)
		}
	}
	if strings.Contains(body, `href="/sessions/other"`) || strings.Contains(body, "<script>") {
		t.Errorf("the search page shows a session without the word, or the query unescaped")
	}
	if i, j := strings.Index(body, "trip-2"), strings.Index(body, "trip-1"); i < 0 || j < 0 || i > j {
		t.Error("trip-2, which holds the word twice, is not first")
	}
	if body := page("/sessions?text=cities&label=team%3Dtravel"); !strings.Contains(body, "No session holds any of these words.") {
		t.Error("a search with no result does not say so")
	}
}
