package ltdriver

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cairnhq/cairn/longterm"
)

// Search is a search resolved by CheckSearch: what a backend looks for.
type Search struct {
	Mode    longterm.SearchMode // ModeText, ModeVector or ModeHybrid; never ModeAuto
	Phrases [][]string          // the query's phrases (longterm.Phrases); none: no text hit
	Vector  []float32           // the query vector, in vector and hybrid mode
	Model   string              // the vector model to compare with
	Weight  float64             // the text score's share of a hybrid score
	Prefix  string
	Labels  map[string]string
	Limit   int
	// Candidates is how many hits each side should find: Limit in text
	// or vector mode; more in hybrid mode, where the two lists are
	// merged (HybridCandidates).
	Candidates int
}

// Text reports whether the search ranks by text; Vectors whether by
// vector.
func (s Search) Text() bool    { return s.Mode != longterm.ModeVector }
func (s Search) Vectors() bool { return s.Mode != longterm.ModeText }

// HybridCandidates is how many hits a hybrid search takes from each side
// for a limit: five times the limit, at least 50. An item outside one
// side's list counts 0 for that side.
func HybridCandidates(limit int) int { return max(5*limit, 50) }

// CheckSearch validates a search and resolves it: its phrases, its vector
// (computed from the query by o.Embedder when none is given and the mode
// wants one), its mode, weight and limit. o must have its defaults.
func CheckSearch(ctx context.Context, o longterm.Options, so longterm.SearchOptions) (Search, error) {
	s := Search{Prefix: so.Prefix, Labels: so.Labels, Model: so.VectorModel}
	if err := longterm.ValidatePrefix(so.Prefix); err != nil {
		return s, err
	}
	if err := longterm.ValidateLabels(so.Labels); err != nil {
		return s, err
	}
	switch {
	case so.Limit == 0:
		s.Limit = longterm.DefaultSearchLimit
	case so.Limit < 0 || so.Limit > longterm.MaxSearchLimit:
		return s, &longterm.InvalidError{What: "limit", Why: fmt.Sprintf("%d is outside 1 to %d", so.Limit, longterm.MaxSearchLimit)}
	default:
		s.Limit = so.Limit
	}
	switch w := so.TextWeight; {
	case math.IsNaN(w) || w < 0 || w > 1:
		return s, &longterm.InvalidError{What: "text_weight", Why: fmt.Sprintf("%v is outside 0 to 1", w)}
	case w == 0:
		s.Weight = longterm.DefaultTextWeight
	default:
		s.Weight = w
	}
	switch so.Mode {
	case longterm.ModeAuto, longterm.ModeText, longterm.ModeVector, longterm.ModeHybrid:
	default:
		return s, &longterm.InvalidError{What: "mode", Why: fmt.Sprintf("%q is not one of text, vector, hybrid or empty (auto)", so.Mode)}
	}
	if strings.TrimSpace(so.Query) == "" && len(so.Vector) == 0 && so.Mode != longterm.ModeVector {
		return s, &longterm.InvalidError{What: "query", Why: "a search needs a query or a vector"}
	}
	s.Phrases = longterm.Phrases(so.Query)
	if len(so.Vector) > 0 {
		if err := CheckVector("vector", so.Vector); err != nil {
			return s, err
		}
		s.Vector = so.Vector
	} else if so.Mode != longterm.ModeText && o.Embedder != nil && len(s.Phrases) > 0 {
		v, err := embed(ctx, o.Embedder, so.Query)
		if err != nil {
			return s, fmt.Errorf("search: %w", err)
		}
		s.Vector, s.Model = v, o.Embedder.Name()
	}
	s.Mode = so.Mode
	switch so.Mode {
	case longterm.ModeAuto:
		switch {
		case len(s.Vector) > 0 && strings.TrimSpace(so.Query) != "":
			s.Mode = longterm.ModeHybrid
		case len(s.Vector) > 0:
			s.Mode = longterm.ModeVector
		default:
			s.Mode = longterm.ModeText
		}
	case longterm.ModeText:
		if strings.TrimSpace(so.Query) == "" {
			return s, &longterm.InvalidError{What: "query", Why: "a text search needs a query"}
		}
	case longterm.ModeVector, longterm.ModeHybrid:
		if len(so.Vector) == 0 && o.Embedder == nil {
			return s, &longterm.InvalidError{What: "vector", Why: fmt.Sprintf("a %s search needs SearchOptions.Vector, or a store with an Embedder and a query", so.Mode)}
		}
		if so.Mode == longterm.ModeVector && len(so.Vector) == 0 && strings.TrimSpace(so.Query) == "" {
			return s, &longterm.InvalidError{What: "vector", Why: "a vector search needs SearchOptions.Vector, or a query for the store's Embedder"}
		}
	}
	s.Candidates = s.Limit
	if s.Mode == longterm.ModeHybrid {
		s.Candidates = HybridCandidates(s.Limit)
	}
	return s, nil
}

// Hit is one item a side of a search found: its place and its score on
// that side (Text, a BM25 score; Vector, a cosine similarity). Ref is the
// backend's own handle on the item (a row, a pointer), passed through.
type Hit struct {
	Namespace, Key string
	Text, Vector   float64
	Ref            any
}

// Ranked is a hit with its final score, as Rank orders them.
type Ranked struct {
	Hit
	Score float64
}

// Rank merges the text hits and the vector hits of a search into the
// results' order: by Score (see longterm.Result), highest first, ties in
// namespace and key order, at most s.Limit. A hit on both sides is one
// result, with both scores and the text side's Ref.
func Rank(s Search, text, vector []Hit) []Ranked {
	byPlace := map[[2]string]*Ranked{}
	var all []*Ranked
	take := func(h Hit, isText bool) {
		k := [2]string{h.Namespace, h.Key}
		r := byPlace[k]
		if r == nil {
			r = &Ranked{Hit: Hit{Namespace: h.Namespace, Key: h.Key, Ref: h.Ref}}
			byPlace[k] = r
			all = append(all, r)
		}
		if isText {
			r.Text = h.Text
		} else {
			r.Vector = h.Vector
		}
	}
	if s.Text() {
		for _, h := range text {
			take(h, true)
		}
	}
	if s.Vectors() {
		for _, h := range vector {
			take(h, false)
		}
	}
	best := 0.0
	for _, r := range all {
		best = max(best, r.Text)
	}
	for _, r := range all {
		t := 0.0
		if best > 0 {
			t = r.Text / best
		}
		v := max(0, r.Vector)
		switch s.Mode {
		case longterm.ModeText:
			r.Score = t
		case longterm.ModeVector:
			r.Score = v
		default:
			r.Score = s.Weight*t + (1-s.Weight)*v
		}
	}
	slices.SortFunc(all, func(a, b *Ranked) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return CompareItems(a.Namespace, a.Key, b.Namespace, b.Key)
	})
	out := make([]Ranked, 0, min(len(all), s.Limit))
	for _, r := range all[:min(len(all), s.Limit)] {
		out = append(out, *r)
	}
	return out
}

// Find runs the sides of search s that can find anything, the text side
// (s.Text, with phrases) and the vector side (s.Vectors, with a vector),
// and ranks their hits (Rank). It returns the first error a side returns.
func Find(ctx context.Context, s Search, text, vector func(context.Context, Search) ([]Hit, error)) ([]Ranked, error) {
	var th, vh []Hit
	var err error
	if s.Text() && len(s.Phrases) > 0 {
		if th, err = text(ctx, s); err != nil {
			return nil, err
		}
	}
	if s.Vectors() && len(s.Vector) > 0 {
		if vh, err = vector(ctx, s); err != nil {
			return nil, err
		}
	}
	return Rank(s, th, vh), nil
}

// Result is the search result of r with its item it.
func (r Ranked) Result(it longterm.Item) longterm.Result {
	return longterm.Result{Item: it, Score: r.Score, TextScore: r.Text, VectorScore: r.Vector}
}

// Results pairs the ranked hits with their items, found in items by the
// hits' Refs, in rank order. A hit whose item is not in items is left
// out.
func Results[K comparable](ranked []Ranked, items map[K]longterm.Item) []longterm.Result {
	out := make([]longterm.Result, 0, len(ranked))
	for _, r := range ranked {
		if it, ok := items[r.Ref.(K)]; ok {
			out = append(out, r.Result(it))
		}
	}
	return out
}

// VectorMatches reports whether an item's vector takes part in the
// search's vector side: of the search's model and of its length.
func (s Search) VectorMatches(model string, dims int) bool {
	return model == s.Model && dims == len(s.Vector) && dims > 0
}

// TopHits keeps the best n hits by one side's score, offered one at a
// time: a backend that computes cosine over many items keeps only n in
// memory. Ties go to the item first in namespace and key order.
type TopHits struct {
	n      int
	vector bool
	hits   []Hit // a min-heap on the score
}

// NewTopHits keeps the n best hits by Vector score (vector) or Text score.
func NewTopHits(n int, vector bool) *TopHits { return &TopHits{n: n, vector: vector} }

func (t *TopHits) score(h Hit) float64 {
	if t.vector {
		return h.Vector
	}
	return h.Text
}

// less reports whether a ranks below b.
func (t *TopHits) less(a, b Hit) bool {
	sa, sb := t.score(a), t.score(b)
	if sa != sb {
		return sa < sb
	}
	return CompareItems(a.Namespace, a.Key, b.Namespace, b.Key) > 0
}

// Offer considers h.
func (t *TopHits) Offer(h Hit) {
	if t.n <= 0 {
		return
	}
	if len(t.hits) < t.n {
		t.hits = append(t.hits, h)
		t.up(len(t.hits) - 1)
		return
	}
	if !t.less(t.hits[0], h) {
		return
	}
	t.hits[0] = h
	t.down(0)
}

// Hits returns the hits kept, best first.
func (t *TopHits) Hits() []Hit {
	out := slices.Clone(t.hits)
	slices.SortFunc(out, func(a, b Hit) int {
		switch {
		case t.less(b, a):
			return -1
		case t.less(a, b):
			return 1
		}
		return 0
	})
	return out
}

func (t *TopHits) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.less(t.hits[i], t.hits[p]) {
			return
		}
		t.hits[i], t.hits[p] = t.hits[p], t.hits[i]
		i = p
	}
}

func (t *TopHits) down(i int) {
	for {
		l, small := 2*i+1, i
		if l < len(t.hits) && t.less(t.hits[l], t.hits[small]) {
			small = l
		}
		if r := l + 1; r < len(t.hits) && t.less(t.hits[r], t.hits[small]) {
			small = r
		}
		if small == i {
			return
		}
		t.hits[i], t.hits[small] = t.hits[small], t.hits[i]
		i = small
	}
}
