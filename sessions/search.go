package sessions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm"
)

// ErrNoSearch is Search's error for a store without driver.Searcher: an
// encrypting store (store/crypt), or a wrapper that hides the ability.
var ErrNoSearch = errors.New("this store does not search sessions")

// DefaultSearchLimit is how many sessions Search returns when
// SearchOptions.Limit is 0.
const DefaultSearchLimit = 20

// maxSearchScan bounds how many hits Search reads from the store while
// its filters leave fewer than the limit.
const maxSearchScan = 10000

// SearchOptions narrow Search to the sessions a listing would show.
type SearchOptions struct {
	Status       []cairn.Status    // any of these statuses
	Labels       map[string]string // all of these labels, with these values
	UpdatedAfter time.Time         // updated strictly after
	Limit        int               // how many sessions; 0: DefaultSearchLimit
}

// wrapper is a store that wraps another and says whether it may be
// searched through it: store/crypt's, whose guard may and whose
// encrypting store may not.
type wrapper interface{ Searcher() driver.Searcher }

// Found is a session Search found, at its best-matching event.
type Found struct {
	Session cairn.SessionInfo `json:"session"`
	Seq     int64             `json:"seq"`
	Kind    cairn.Kind        `json:"kind"`
	At      time.Time         `json:"at"`
	Score   float64           `json:"score"`
	Snippet string            `json:"snippet"`
}

// Search finds the sessions of store whose events' text holds the words
// of query (driver.Searcher), best first, with the options' filters, each
// with its best event's seq, kind and a snippet of its text around the
// first word found. It returns ErrNoSearch when the store cannot search.
func Search(ctx context.Context, store cairn.Store, query string, o SearchOptions) ([]Found, error) {
	sr, ok := store.(driver.Searcher)
	if w, wraps := store.(wrapper); !ok && wraps {
		sr = w.Searcher()
		ok = sr != nil
	}
	if !ok {
		return nil, ErrNoSearch
	}
	if o.Limit <= 0 {
		o.Limit = DefaultSearchLimit
	}
	words := map[string]bool{}
	for _, p := range longterm.Phrases(query) {
		for _, t := range p {
			words[t] = true
		}
	}
	if len(words) == 0 {
		return []Found{}, nil
	}
	out := []Found{}
	read := 0
	for n := max(4*o.Limit, 50); ; n = min(4*n, maxSearchScan) {
		hits, err := sr.Search(ctx, query, n)
		if err != nil {
			return nil, fmt.Errorf("search sessions: %w", err)
		}
		for _, h := range hits[min(read, len(hits)):] {
			f, ok, err := found(ctx, store, h, o, words)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, f)
				if len(out) == o.Limit {
					return out, nil
				}
			}
		}
		read = len(hits)
		if len(hits) < n || n == maxSearchScan {
			return out, nil
		}
	}
}

// found reads the session and event of hit and reports whether the
// session passes the options' filters. A session deleted since the search
// is left out.
func found(ctx context.Context, store cairn.Store, h driver.SearchHit, o SearchOptions, words map[string]bool) (Found, bool, error) {
	rec, err := store.Load(ctx, h.ID, h.Seq)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		return Found{}, false, nil
	case err != nil:
		return Found{}, false, fmt.Errorf("search sessions: read %s: %w", h.ID, err)
	}
	info := rec.Info
	if len(o.Status) > 0 && !slices.Contains(o.Status, info.Status) ||
		!o.UpdatedAfter.IsZero() && !info.UpdatedAt.After(o.UpdatedAfter) {
		return Found{}, false, nil
	}
	for k, v := range o.Labels {
		if got, ok := info.Labels[k]; !ok || got != v {
			return Found{}, false, nil
		}
	}
	f := Found{Session: info, Seq: h.Seq, Score: h.Score}
	if len(rec.Events) > 0 && rec.Events[0].Seq == h.Seq {
		e := rec.Events[0]
		f.Kind, f.At, f.Snippet = e.Kind, e.At, Snippet(e.SearchText(), words, snippetRunes)
	}
	f.Session.Labels = maps.Clone(info.Labels)
	return f, true, nil
}

// snippetRunes is about how long a snippet is.
const snippetRunes = 160

// Snippet returns about n runes of text around the first of its tokens
// that words holds (as longterm.Tokens reads tokens, in lower case), with
// "…" where it was cut, and the white space of the text folded to single
// spaces. Without such a token it returns the start of the text.
func Snippet(text string, words map[string]bool, n int) string {
	rs := []rune(strings.Join(strings.Fields(text), " "))
	at := 0
	for i := 0; i < len(rs); {
		if !longterm.IsTokenRune(rs[i]) {
			i++
			continue
		}
		j := i
		for j < len(rs) && longterm.IsTokenRune(rs[j]) {
			j++
		}
		if words[strings.ToLower(string(rs[i:j]))] {
			at = i
			break
		}
		i = j
	}
	start := max(0, at-n/3)
	for start > 0 && start > at-n/3-12 && rs[start-1] != ' ' {
		start-- // back to a word's start, within a few runes
	}
	end := min(len(rs), start+n)
	for end < len(rs) && end < start+n+12 && rs[end] != ' ' {
		end++
	}
	s := string(rs[start:end])
	if start > 0 {
		s = "…" + strings.TrimLeft(s, " ")
	}
	if end < len(rs) {
		s = strings.TrimRight(s, " ") + "…"
	}
	return s
}
