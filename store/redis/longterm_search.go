package redis

import (
	"context"
	"slices"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// Search implements longterm.Store. The text side intersects the token
// sets of each phrase (SINTER), reads the texts of the items found, counts
// each phrase in them and scores BM25 over the whole memory's statistics,
// as the memory backend does, then filters. The vector side reads the
// vectors of the items under the prefix and computes cosine. Its cost
// grows with the items the query's words name (text) and with the items
// under the prefix (vector); nothing is read twice.
func (s *LongTerm) Search(ctx context.Context, opts longterm.SearchOptions) ([]longterm.Result, error) {
	q, err := s.guard.Search(ctx, s.opts, opts)
	if err != nil {
		return nil, err
	}
	ranked, err := ltdriver.Find(ctx, q, s.textHits, s.vectorHits)
	if err != nil {
		return nil, s.fail("search", err)
	}
	if len(ranked) == 0 {
		return nil, nil
	}
	ms := make([]string, len(ranked))
	for i, r := range ranked {
		ms[i] = member(r.Namespace, r.Key)
	}
	items, oks, err := s.getItems(ctx, ms, false)
	if err != nil {
		return nil, s.fail("search", err)
	}
	now := ltdriver.Now(s.opts)
	out := make([]longterm.Result, 0, len(ranked))
	for i, r := range ranked {
		if oks[i] && !ltdriver.Expired(items[i].ExpiresAt, now) {
			out = append(out, r.Result(items[i]))
		}
	}
	return out, nil
}

// textHits returns the best q.Candidates items by BM25.
func (s *LongTerm) textHits(ctx context.Context, q ltdriver.Search) ([]ltdriver.Hit, error) {
	inters := make([]*goredis.StringSliceCmd, len(q.Phrases))
	var stats *goredis.SliceCmd
	_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, ph := range q.Phrases {
			keys := make([]string, 0, len(ph))
			for _, t := range ph {
				keys = append(keys, s.base+"t:"+TokenHash(t))
			}
			inters[i] = p.SInter(ctx, slices.Compact(keys)...)
		}
		stats = p.HMGet(ctx, s.base+"stats", "n", "len")
		return nil
	})
	if err != nil {
		return nil, err
	}
	var cands []string
	seen := map[string]bool{}
	for _, c := range inters {
		for _, m := range c.Val() {
			if !seen[m] {
				seen[m] = true
				cands = append(cands, m)
			}
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	st := stats.Val()
	n, _ := strconv.ParseFloat(str(st[0]), 64)
	total, _ := strconv.ParseFloat(str(st[1]), 64)
	items, oks, err := s.getItems(ctx, cands, false)
	if err != nil {
		return nil, err
	}
	toks := make([][]string, len(items))
	lengths := make([]float64, len(items))
	for i, it := range items {
		if oks[i] {
			toks[i] = longterm.Tokens(it.Text)
			lengths[i] = float64(docLength(it.Namespace, toks[i]))
		}
	}
	if n < 1 {
		n = 1
	}
	avg := max(total/n, 1e-9)
	now := ltdriver.Now(s.opts)
	scores := ltdriver.ScoreTokens(q.Phrases, toks, lengths, n, avg)
	top := ltdriver.NewTopHits(q.Candidates, false)
	for i, it := range items {
		if scores[i] <= 0 || !longterm.InPrefix(q.Prefix, it.Namespace) || ltdriver.Expired(it.ExpiresAt, now) ||
			!ltdriver.MatchLabels(q.Labels, it.Labels) {
			continue
		}
		top.Offer(ltdriver.Hit{Namespace: it.Namespace, Key: it.Key, Text: scores[i]})
	}
	return top.Hits(), nil
}

func str(v any) string { s, _ := v.(string); return s }

// vectorHits returns the best q.Candidates items by cosine similarity,
// over every item under the prefix with a vector of the search's model
// and length, read a chunk at a time.
func (s *LongTerm) vectorHits(ctx context.Context, q ltdriver.Search) ([]ltdriver.Hit, error) {
	lo, hi := "-", "+"
	if q.Prefix != "" {
		p, h := longterm.PrefixRange(q.Prefix)
		lo, hi = "["+p, "("+h
	}
	now := ltdriver.Now(s.opts)
	top := ltdriver.NewTopHits(q.Candidates, true)
	const chunk = 1000
	for {
		ms, err := s.client.ZRangeByLex(ctx, s.base+"paths", &goredis.ZRangeBy{Min: lo, Max: hi, Count: chunk}).Result()
		if err != nil {
			return nil, err
		}
		cmds := make([]*goredis.SliceCmd, len(ms))
		_, err = s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, m := range ms {
				cmds[i] = p.HMGet(ctx, s.itemKey(m), "ns", "key", "model", "vec", "ea", "labels")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, c := range cmds {
			v := c.Val()
			vec := str(v[3])
			if v[0] == nil || str(v[2]) != q.Model || len(vec) != 4*len(q.Vector) || len(vec) == 0 ||
				ltdriver.Expired(unstamp(str(v[4])), now) {
				continue
			}
			if len(q.Labels) > 0 {
				it, _, err := readItem([]any{v[0], v[1], nil, nil, v[5], nil, nil, nil, nil, nil, nil, nil}, nil)
				if err != nil {
					return nil, err
				}
				if !ltdriver.MatchLabels(q.Labels, it.Labels) {
					continue
				}
			}
			top.Offer(ltdriver.Hit{Namespace: str(v[0]), Key: str(v[1]), Vector: ltdriver.CosineEncoded(q.Vector, []byte(vec))})
		}
		if len(ms) < chunk {
			return top.Hits(), nil
		}
		lo = "(" + ms[len(ms)-1]
	}
}
