package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

var _ driver.Searcher = (*Store)(nil)

// findScript finds the sessions that hold every token of a phrase, for
// each phrase: it walks the pairs of the phrase's rarest token and checks
// the others of each session found.
//
//	KEYS: pairs, stats
//	ARGV: phrase... (the distinct hashes of its tokens, space-separated)
//	returns {n, len, ready, id...}
var findScript = goredis.NewScript(luaHelpers + searchHelpers + `
local st = redis.call('HMGET', KEYS[2], 'n', 'len', 'ready')
local out = {st[1] or '0', st[2] or '0', st[3] or ''}
local seen = {}
for i = 1, #ARGV do
  local hs = words(ARGV[i])
  local best, least = nil, -1
  for _, h in ipairs(hs) do
    local c = redis.call('ZLEXCOUNT', KEYS[1], '[t:' .. h .. ':', '(t:' .. h .. ';')
    if c == 0 then
      best = nil
      break
    end
    if least < 0 or c < least then best, least = h, c end
  end
  if best then
    for _, m in ipairs(redis.call('ZRANGEBYLEX', KEYS[1], '[t:' .. best .. ':', '(t:' .. best .. ';')) do
      local id = string.sub(m, #best + 4)
      local all = not seen[id]
      for _, h in ipairs(hs) do
        if all and h ~= best then all = redis.call('ZSCORE', KEYS[1], 't:' .. h .. ':' .. id) ~= false end
      end
      if all then
        seen[id] = true
        out[#out + 1] = id
      end
    end
  end
end
return out
`)

// phrase is a phrase of a query: its tokens and their distinct hashes.
type phrase struct {
	tokens []string
	hashes []string
}

// posting is a token's count in an event, and the event's length.
type posting struct{ tf, dl int }

// candidate is a session that holds every token of some phrase.
type candidate struct {
	id    string
	live  bool
	post  map[string]map[int64]posting // hash → seq → posting
	texts map[int64][]string           // seq → the event's tokens, for phrases of several
}

// Search implements driver.Searcher. One script on the namespace keys
// finds the sessions that hold a phrase's tokens, with the statistics;
// one pipeline reads those sessions' metas and their postings of the
// query's tokens; a phrase of several tokens is counted in the texts of
// the events that hold them all, read in one more pipeline. What it costs
// follows the sessions and events the query's words are in, not the size
// of the namespace. The statistics are the namespace's; an expired
// session not yet swept counts in them, as it does in the memory store,
// but is not returned.
//
// The first search of a namespace written by an earlier version of the
// store indexes its sessions first (searchReady).
func (s *Store) Search(ctx context.Context, query string, limit int) (_ []driver.SearchHit, err error) {
	defer unavailable(&err)
	words, err := s.guard.Search(query, limit)
	if err != nil || len(words) == 0 {
		return nil, err
	}
	phrases := make([]phrase, len(words))
	for i, w := range words {
		phrases[i].tokens = w
		seen := map[string]bool{}
		for _, t := range w {
			if h := TokenHash(t); !seen[h] {
				seen[h] = true
				phrases[i].hashes = append(phrases[i].hashes, h)
			}
		}
	}
	hits, err := s.search(ctx, phrases)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	return driver.BestPerSession(hits, limit), nil
}

// search returns the scored events of the live sessions that match.
func (s *Store) search(ctx context.Context, phrases []phrase) ([]driver.SearchHit, error) {
	n, total, ids, err := s.find(ctx, phrases)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	cands, err := s.candidates(ctx, ids, phrases)
	if err != nil {
		return nil, err
	}
	n = max(n, 1)
	avg := max(total/n, 1e-9)
	scores := map[string]map[int64]float64{}
	for _, p := range phrases {
		ms := matches(cands, p)
		if len(ms) == 0 {
			continue
		}
		df := float64(len(ms))
		idf := ltdriver.IDF(n, df)
		for _, m := range ms {
			if !m.c.live {
				continue
			}
			f, dl := float64(m.tf), float64(m.dl)
			if scores[m.c.id] == nil {
				scores[m.c.id] = map[int64]float64{}
			}
			scores[m.c.id][m.seq] += ltdriver.BM25(idf, f, dl, avg)
		}
	}
	var hits []driver.SearchHit
	for id, seqs := range scores {
		for seq, sc := range seqs {
			hits = append(hits, driver.SearchHit{ID: id, Seq: seq, Score: sc})
		}
	}
	return hits, nil
}

// match is an event that holds a phrase tf times, of length dl.
type match struct {
	c      *candidate
	seq    int64
	tf, dl int
}

// matches returns the events of cands, live or expired, that hold phrase
// p: as their postings say for a phrase of one token, as their texts say
// for a phrase of several.
func matches(cands []*candidate, p phrase) []match {
	var ms []match
	for _, c := range cands {
		for seq, pst := range c.post[p.hashes[0]] {
			if !holdsAll(c, p.hashes[1:], seq) {
				continue
			}
			m := match{c: c, seq: seq, tf: pst.tf, dl: pst.dl}
			if len(p.tokens) > 1 {
				toks := c.texts[seq]
				m.tf, m.dl = ltdriver.Count(toks, p.tokens), len(toks)
			}
			if m.tf > 0 {
				ms = append(ms, m)
			}
		}
	}
	return ms
}

// holdsAll reports whether event seq of c holds every token of hashes.
func holdsAll(c *candidate, hashes []string, seq int64) bool {
	for _, h := range hashes {
		if _, ok := c.post[h][seq]; !ok {
			return false
		}
	}
	return true
}

// find runs findScript, first indexing a namespace that is not marked
// complete. It returns the statistics and the sessions found.
func (s *Store) find(ctx context.Context, phrases []phrase) (n, total float64, ids []string, err error) {
	args := make([]any, len(phrases))
	for i, p := range phrases {
		args[i] = strings.Join(p.hashes, " ")
	}
	keys := s.searchKeys()
	for try := 0; ; try++ {
		res, err := retry(ctx, func(ctx context.Context) ([]string, error) {
			return findScript.Run(ctx, s.client, keys, args...).StringSlice()
		})
		if err != nil {
			return 0, 0, nil, err
		}
		if len(res) < 3 {
			return 0, 0, nil, fmt.Errorf("unexpected script reply %q", res)
		}
		if res[2] == "" && try == 0 {
			if err := s.searchReady(ctx); err != nil {
				return 0, 0, nil, fmt.Errorf("index the namespace's sessions: %w", err)
			}
			continue
		}
		n, _ = strconv.ParseFloat(res[0], 64)
		total, _ = strconv.ParseFloat(res[1], 64)
		return n, total, res[3:], nil
	}
}

// candidates reads the sessions ids found: whether each is live, its
// postings of the query's tokens and, for phrases of several tokens, the
// tokens of the events that hold all of theirs. Sessions that are gone
// are left out.
func (s *Store) candidates(ctx context.Context, ids []string, phrases []phrase) ([]*candidate, error) {
	var hashes []string
	seen := map[string]bool{}
	for _, p := range phrases {
		for _, h := range p.hashes {
			if !seen[h] {
				seen[h] = true
				hashes = append(hashes, h)
			}
		}
	}
	metas := make([]*goredis.SliceCmd, len(ids))
	posts := make([][]*goredis.StringSliceCmd, len(ids))
	_, err := retry(ctx, func(ctx context.Context) ([]goredis.Cmder, error) {
		return s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, id := range ids {
				metas[i] = p.HMGet(ctx, s.metaKey(id), "expires_at", "last_seq")
				posts[i] = make([]*goredis.StringSliceCmd, len(hashes))
				for j, h := range hashes {
					posts[i][j] = p.ZRangeByLex(ctx, s.termsKey(id), &goredis.ZRangeBy{Min: "[" + h + ":", Max: "(" + h + ";"})
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	now := s.now()
	var cands []*candidate
	for i, id := range ids {
		v := metas[i].Val()
		if len(v) != 2 || v[1] == nil {
			continue // gone
		}
		exp, _ := v[0].(string)
		c := &candidate{id: id, live: !driver.Expired(fromNanos(exp), now), post: map[string]map[int64]posting{}}
		for j, h := range hashes {
			for _, m := range posts[i][j].Val() {
				if seq, p, ok := parsePosting(m, h); ok {
					if c.post[h] == nil {
						c.post[h] = map[int64]posting{}
					}
					c.post[h][seq] = p
				}
			}
		}
		cands = append(cands, c)
	}
	return cands, s.readTexts(ctx, cands, phrases)
}

// parsePosting decodes a member HASH:SEQ:TF:DL of a session's terms.
func parsePosting(m, hash string) (seq int64, p posting, ok bool) {
	rest, ok := strings.CutPrefix(m, hash+":")
	if !ok {
		return 0, p, false
	}
	f := strings.Split(rest, ":")
	if len(f) != 3 {
		return 0, p, false
	}
	seq, err1 := strconv.ParseInt(f[0], 10, 64)
	tf, err2 := strconv.Atoi(f[1])
	dl, err3 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, p, false
	}
	return seq, posting{tf: tf, dl: dl}, true
}

// readTexts reads, in one pipeline, the events whose text a phrase of
// several tokens must be counted in: those that hold all its tokens.
func (s *Store) readTexts(ctx context.Context, cands []*candidate, phrases []phrase) error {
	type want struct {
		c   *candidate
		seq int64
		cmd *goredis.StringSliceCmd
	}
	var wants []*want
	for _, c := range cands {
		need := map[int64]bool{}
		for _, p := range phrases {
			if len(p.tokens) < 2 {
				continue
			}
			for seq := range c.post[p.hashes[0]] {
				if !need[seq] && holdsAll(c, p.hashes[1:], seq) {
					need[seq] = true
					wants = append(wants, &want{c: c, seq: seq})
				}
			}
		}
	}
	if len(wants) == 0 {
		return nil
	}
	_, err := retry(ctx, func(ctx context.Context) ([]goredis.Cmder, error) {
		return s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, w := range wants {
				w.cmd = p.LRange(ctx, s.eventsKey(w.c.id), w.seq-1, w.seq-1)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, w := range wants {
		if w.c.texts == nil {
			w.c.texts = map[int64][]string{}
		}
		if raw := w.cmd.Val(); len(raw) == 1 {
			if e, ok := decodeEnvelope(raw[0]); ok && e.Seq == w.seq {
				w.c.texts[w.seq] = longterm.Tokens(e.SearchText())
			}
		}
	}
	return nil
}

// decodeEnvelope decodes a stored event, as Load does.
func decodeEnvelope(raw string) (cairn.Event, bool) {
	b := []byte(raw)
	if e, ok := driver.ParseEnvelope(b); ok {
		return e, true
	}
	var e cairn.Event
	return e, json.Unmarshal(b, &e) == nil
}
