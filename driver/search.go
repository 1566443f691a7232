package driver

import (
	"cmp"
	"slices"
)

// BestPerSession turns the scored events of a search into what
// Searcher returns: each session once, at its best event (on a tie,
// the lowest seq), best first (on a tie, by ID), at most limit. It sorts
// hits in place.
func BestPerSession(hits []SearchHit, limit int) []SearchHit {
	slices.SortFunc(hits, func(a, b SearchHit) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(b.Score, a.Score), cmp.Compare(a.Seq, b.Seq))
	})
	best := hits[:0] // each session's first hit, written over the hits read
	for _, h := range hits {
		if len(best) == 0 || h.ID != best[len(best)-1].ID {
			best = append(best, h)
		}
	}
	slices.SortFunc(best, func(a, b SearchHit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.ID, b.ID))
	})
	if limit >= 0 && len(best) > limit {
		best = best[:limit]
	}
	return best
}
