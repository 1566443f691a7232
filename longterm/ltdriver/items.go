package ltdriver

import (
	"iter"

	"github.com/cairnhq/cairn/longterm"
)

// SearchItems runs search s over items a backend holds in memory: the
// text side scores the documents of the indexes (Score), item giving a
// document's item; the vector side computes cosine over items; keep
// filters both sides. The results hold copies of the items, without
// their vectors.
func SearchItems(s Search, indexes []*Index, item func(x *Index, id string) *longterm.Item,
	items iter.Seq[*longterm.Item], keep func(*longterm.Item) bool) []longterm.Result {
	var text, vector []Hit
	if s.Text() {
		text = indexHits(s, indexes, item, keep)
	}
	if s.Vectors() && len(s.Vector) > 0 {
		vector = itemHits(s, items, keep)
	}
	var out []longterm.Result
	for _, r := range Rank(s, text, vector) {
		out = append(out, r.Result(Clone(r.Ref.(*longterm.Item), false)))
	}
	return out
}

// indexHits returns the best s.Candidates items that keep accepts by
// their documents' BM25 scores.
func indexHits(s Search, indexes []*Index, item func(x *Index, id string) *longterm.Item, keep func(*longterm.Item) bool) []Hit {
	top := NewTopHits(s.Candidates, false)
	scores := Score(indexes, s.Phrases, func(x *Index, id string) bool { return keep(item(x, id)) })
	for x, m := range scores {
		for id, score := range m {
			it := item(x, id)
			top.Offer(Hit{Namespace: it.Namespace, Key: it.Key, Text: score, Ref: it})
		}
	}
	return top.Hits()
}

// itemHits returns the best s.Candidates items that keep accepts by
// cosine similarity, over those with a vector of the search's model and
// length.
func itemHits(s Search, items iter.Seq[*longterm.Item], keep func(*longterm.Item) bool) []Hit {
	top := NewTopHits(s.Candidates, true)
	for it := range items {
		if keep(it) && s.VectorMatches(it.VectorModel, len(it.Vector)) {
			top.Offer(Hit{Namespace: it.Namespace, Key: it.Key, Vector: longterm.Cosine(s.Vector, it.Vector), Ref: it})
		}
	}
	return top.Hits()
}
