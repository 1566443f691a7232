package server

import (
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/sessions"
)

// MaxSearchLimit bounds the sessions one search returns.
const MaxSearchLimit = 100

// searchStatuses are the statuses a search may name: those a store
// records (an import not yet finished is new or running there).
var searchStatuses = slices.DeleteFunc(slices.Clone(Statuses), func(s cairn.Status) bool { return s == sessions.StatusIncomplete })

// searchQuery is a search across sessions (GET /api/search, and the
// sessions page with text=): the words, and the list's filters.
type searchQuery struct {
	text string
	opts sessions.SearchOptions
}

// parseSearchQuery reads a search from the parameter named by textParam
// (q for the API, text for the sessions page) and status, label,
// updated_after and limit.
func parseSearchQuery(q url.Values, textParam string) (searchQuery, error) {
	sq := searchQuery{text: strings.TrimSpace(q.Get(textParam))}
	if sq.text == "" {
		return sq, badRequest(textParam, "give the words to look for in %s=", textParam)
	}
	n, err := queryInt(q, "limit", sessions.DefaultSearchLimit, 1, MaxSearchLimit)
	if err != nil {
		return sq, err
	}
	sq.opts.Limit = int(n)
	if sq.opts.Status, err = queryStatuses(q, searchStatuses); err != nil {
		return sq, err
	}
	if sq.opts.Labels, err = queryLabels(q, "KEY=VALUE"); err != nil {
		return sq, err
	}
	if s := q.Get("updated_after"); s != "" {
		if sq.opts.UpdatedAfter, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return sq, badRequest("updated_after", "updated_after=%q is not an RFC 3339 time", s)
		}
	}
	return sq, nil
}

// foundJSON is one session a search found, as the API gives it.
type foundJSON struct {
	Session sessionJSON `json:"session"`
	Seq     int64       `json:"seq"`
	Kind    cairn.Kind  `json:"kind"`
	At      time.Time   `json:"at"`
	Score   float64     `json:"score"`
	Snippet string      `json:"snippet"`
}

// search runs sq over the store.
func (s *Server) search(r *http.Request, sq searchQuery) ([]foundJSON, error) {
	found, err := sessions.Search(r.Context(), s.store, sq.text, sq.opts)
	if err != nil {
		return nil, err
	}
	infos := make([]cairn.SessionInfo, len(found))
	for i, f := range found {
		infos[i] = f.Session
	}
	held := s.withHolders(r.Context(), infos)
	out := make([]foundJSON, len(found))
	for i, f := range found {
		out[i] = foundJSON{Session: held[i], Seq: f.Seq, Kind: f.Kind, At: f.At, Score: f.Score, Snippet: f.Snippet}
	}
	return out, nil
}

func (s *Server) apiSearch(w http.ResponseWriter, r *http.Request) error {
	sq, err := parseSearchQuery(r.URL.Query(), "q")
	if err != nil {
		return err
	}
	found, err := s.search(r, sq)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": found})
	return nil
}

// eventURL is the session page at the event of seq, its timeline
// showing it, as a memory's source links it.
func eventURL(id string, seq int64) string {
	return sourceLink(longterm.Source{Session: id, Seq: seq})
}

// uiSearch is the sessions page showing a search of the sessions' text
// (text=) rather than the list.
func (s *Server) uiSearch(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	sq, err := parseSearchQuery(q, "text")
	if err != nil {
		return err
	}
	d := sessionsData{base: s.base(r, "Search: "+sq.text, "sessions"), Statuses: Statuses, Filtered: true,
		Text: sq.text, Status: q.Get("status"), Label: q.Get("label"), Words: map[string]bool{}}
	for _, p := range longterm.Phrases(sq.text) {
		for _, t := range p {
			d.Words[t] = true
		}
	}
	if d.Found, err = s.search(r, sq); err != nil {
		return err
	}
	return s.render(w, http.StatusOK, "sessions.html", d)
}

// marked is text as HTML with the tokens that words holds (in lower
// case, longterm.Tokens' runs of letters and digits) in <mark>.
func marked(text string, words map[string]bool) template.HTML {
	var b strings.Builder
	rs := []rune(text)
	for i := 0; i < len(rs); {
		if !longterm.IsTokenRune(rs[i]) {
			b.WriteString(template.HTMLEscapeString(string(rs[i])))
			i++
			continue
		}
		j := i
		for j < len(rs) && longterm.IsTokenRune(rs[j]) {
			j++
		}
		tok := string(rs[i:j])
		if words[strings.ToLower(tok)] {
			b.WriteString("<mark>" + template.HTMLEscapeString(tok) + "</mark>")
		} else {
			b.WriteString(template.HTMLEscapeString(tok))
		}
		i = j
	}
	return template.HTML(b.String())
}
