package ltdriver

import (
	"math"
	"slices"
	"strings"

	"github.com/cairnhq/cairn/longterm"
)

// BM25 parameters, those of SQLite's FTS5 bm25().
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// IDF is BM25's weight of a phrase that df of n documents hold, as FTS5's
// bm25() takes it: 1e-6 for a phrase in half the documents or more.
func IDF(n, df float64) float64 {
	idf := math.Log((n - df + 0.5) / (df + 0.5))
	if idf <= 0 {
		return 1e-6
	}
	return idf
}

// BM25 is the score of a phrase of weight idf held f times by a document
// of length dl, where the documents' average length is avg.
func BM25(idf, f, dl, avg float64) float64 {
	return idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*dl/avg))
}

// ScoreTokens returns the BM25 score of each document for the phrases,
// the documents given by their tokens (nil for one that is gone) and
// their lengths, in a corpus of n documents of average length avg: the
// text side of a backend that reads the texts its own index names. A
// phrase's weight counts the documents given that hold it.
func ScoreTokens(phrases [][]string, toks [][]string, lengths []float64, n, avg float64) []float64 {
	scores := make([]float64, len(toks))
	for _, ph := range phrases {
		freq := make([]int, len(toks))
		df := 0
		for i := range toks {
			if freq[i] = Count(toks[i], ph); freq[i] > 0 {
				df++
			}
		}
		if df == 0 {
			continue
		}
		idf := IDF(n, float64(df))
		for i, f := range freq {
			if f > 0 {
				scores[i] += BM25(idf, float64(f), lengths[i], avg)
			}
		}
	}
	return scores
}

// Index is a text index in memory, for the backends that have none in
// their database: the tokens of each document (an item, under an ID of
// the backend's choosing) and, for each token, the documents that hold
// it. It scores as SQLite's FTS5 does (BM25 over phrases, with FTS5's
// parameters), so that every backend ranks alike. It is not safe for
// concurrent use.
type Index struct {
	docs     map[string]doc
	postings map[string]map[string]uint32 // token → ID → occurrences
	tokens   int                          // the total of the documents' lengths
}

// doc is an indexed document: its tokens and its length.
type doc struct {
	tokens []string
	length int
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{docs: map[string]doc{}, postings: map[string]map[string]uint32{}}
}

// Len returns how many documents the index holds.
func (x *Index) Len() int { return len(x.docs) }

// Set indexes text, an item's of namespace ns, as document id, replacing
// what id held. A document's length, which BM25 weighs, is its text's
// tokens and one for each segment of its namespace: SQLite's text index
// holds a token for each prefix of an item's namespace beside its text
// (to search a prefix in one MATCH), and FTS5's bm25() counts every
// column in a row's length. A text without a token matches nothing and
// counts in the statistics, as in FTS5, where every item has a row.
func (x *Index) Set(id, ns, text string) {
	x.set(id, longterm.Tokens(text), strings.Count(ns, "/")+1)
}

// SetText indexes text as document id, replacing what id held, with no
// namespace: a document's length is its text's tokens (the session
// stores' index of event texts, driver.Searcher).
func (x *Index) SetText(id, text string) {
	x.set(id, longterm.Tokens(text), 0)
}

// set indexes toks as document id, whose length counts extra more tokens.
func (x *Index) set(id string, toks []string, extra int) {
	x.Remove(id)
	d := doc{tokens: toks, length: len(toks) + extra}
	x.docs[id] = d
	x.tokens += d.length
	for _, t := range toks {
		p := x.postings[t]
		if p == nil {
			p = map[string]uint32{}
			x.postings[t] = p
		}
		p[id]++
	}
}

// Remove drops document id, if the index holds it.
func (x *Index) Remove(id string) {
	d, ok := x.docs[id]
	if !ok {
		return
	}
	delete(x.docs, id)
	x.tokens -= d.length
	for _, t := range d.tokens {
		p := x.postings[t]
		if p == nil {
			continue
		}
		if p[id]--; p[id] == 0 {
			delete(p, id)
		}
		if len(p) == 0 {
			delete(x.postings, t)
		}
	}
}

// Score returns the BM25 score of every document of the indexes that
// holds one of the phrases and that keep accepts (keep nil: all). The
// statistics (how many documents, their average length, how many hold
// each phrase) are taken over all the indexes given, whatever keep says,
// as FTS5 takes them over its whole table. The indexes must not share
// IDs.
func Score(indexes []*Index, phrases [][]string, keep func(x *Index, id string) bool) map[*Index]map[string]float64 {
	n, total := 0, 0
	for _, x := range indexes {
		n += len(x.docs)
		total += x.tokens
	}
	out := map[*Index]map[string]float64{}
	if n == 0 || len(phrases) == 0 {
		return out
	}
	avg := float64(total) / float64(n)
	for _, p := range phrases {
		type match struct {
			x  *Index
			id string
			f  int
		}
		var matches []match
		for _, x := range indexes {
			for id, f := range x.phrase(p) {
				matches = append(matches, match{x, id, f})
			}
		}
		if len(matches) == 0 {
			continue
		}
		idf := IDF(float64(n), float64(len(matches)))
		for _, m := range matches {
			if keep != nil && !keep(m.x, m.id) {
				continue
			}
			dl := float64(m.x.docs[m.id].length)
			f := float64(m.f)
			s := BM25(idf, f, dl, avg)
			if out[m.x] == nil {
				out[m.x] = map[string]float64{}
			}
			out[m.x][m.id] += s
		}
	}
	return out
}

// phrase returns the documents that hold phrase p, with how many times.
func (x *Index) phrase(p []string) map[string]int {
	var rarest map[string]uint32
	for i, t := range p {
		post := x.postings[t]
		if len(post) == 0 {
			return nil
		}
		if i == 0 || len(post) < len(rarest) {
			rarest = post
		}
	}
	out := map[string]int{}
	for id, f := range rarest {
		if len(p) == 1 {
			out[id] = int(f)
			continue
		}
		if c := Count(x.docs[id].tokens, p); c > 0 {
			out[id] = c
		}
	}
	return out
}

// Count returns how many times phrase p occurs in toks.
func Count(toks, p []string) int {
	c := 0
	for i := 0; i+len(p) <= len(toks); i++ {
		if slices.Equal(toks[i:i+len(p)], p) {
			c++
		}
	}
	return c
}
