package redis

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm"
)

// The text index of the events (driver.Searcher) names tokens by
// TokenHash, never by their text, in these keys:
//
//	<session>terms      a sorted set per session, in its slot: for each
//	                    token of each indexed event, HASH:SEQ:TF:DL (the
//	                    token's count in the event, the event's length),
//	                    scores 0, read by lexical range per token
//	<side>search:pairs  a sorted set (scores 0) of t:HASH:ID, the sessions
//	                    that hold each token, to find them, and of
//	                    s:ID:HASH, the same pairs by session, to take a
//	                    session out
//	<side>search:stats  a hash: n (documents) and len (their tokens) over
//	                    the namespace, each session's share (n:ID, l:ID),
//	                    and ready, the mark that every session is indexed
//
// <side> is the prefix of the side indexes (side.go), in the namespace
// index's slot. The postings are written by the append script with the
// events, and are what Search trusts; the namespace keys only find the
// sessions. On a single server the same script writes those too. A
// split store (Cluster, Ring) writes the pairs before the append script
// (hint), so that an event is never stored unfindable, and the counts
// after it (tally): a pair left by an append that failed finds a session
// without the token, which Search passes over; a crash between the script
// and the count leaves the statistics short of that append's documents.
// The namespace keys are kept alive as the namespace index is, the
// postings as the session's keys.

// searchHelpers is prepended to the scripts that write the text index.
// It needs luaHelpers and, for searched, sideHelpers.
const searchHelpers = `
-- searchkeys returns the text index's keys of the namespace whose side
-- indexes have prefix p: its pairs and its statistics.
local function searchkeys(p)
  return p .. 'search:pairs', p .. 'search:stats'
end

-- words returns the words of s, separated by spaces.
local function words(s)
  local out = {}
  for w in string.gmatch(s, '%S+') do out[#out + 1] = w end
  return out
end

-- zaddall adds members ms to the sorted set k, scores 0.
local function zaddall(k, ms)
  for i = 1, #ms, 500 do
    local a = {}
    for j = i, math.min(i + 499, #ms) do
      a[#a + 1] = 0
      a[#a + 1] = ms[j]
    end
    redis.call('ZADD', k, unpack(a))
  end
end

-- keepttl gives a namespace key of the text index the TTL rule of index:
-- none with ttl "0", else ttl, only ever raised on a key that existed
-- before the write.
local function keepttl(k, ttl, existed)
  if ttl == '0' then
    redis.call('PERSIST', k)
  elseif existed then
    redis.call('EXPIRE', k, ttl, 'GT')
  else
    redis.call('EXPIRE', k, ttl)
  end
end

-- hint records in pairs that session id holds the tokens hashes (HASH
-- HASH ...), and keeps pairs alive.
local function hint(pairs, id, hashes, ttl)
  local hs = words(hashes)
  local e = #hs == 0 or redis.call('EXISTS', pairs) == 1
  if #hs > 0 then
    local a = {}
    for _, h in ipairs(hs) do
      a[#a + 1] = 't:' .. h .. ':' .. id
      a[#a + 1] = 's:' .. id .. ':' .. h
    end
    zaddall(pairs, a)
  end
  keepttl(pairs, ttl, e)
end

-- tally counts docs documents of len tokens in, as session id's, and
-- keeps the statistics st alive.
local function tally(st, id, docs, len, ttl)
  local e = tonumber(docs) == 0 or redis.call('EXISTS', st) == 1
  if tonumber(docs) ~= 0 then
    redis.call('HINCRBY', st, 'n', docs)
    redis.call('HINCRBY', st, 'len', len)
    redis.call('HINCRBY', st, 'n:' .. id, docs)
    redis.call('HINCRBY', st, 'l:' .. id, len)
  end
  keepttl(st, ttl, e)
end

-- ready marks the text index of a namespace complete.
local function ready(st, ttl)
  local e = redis.call('EXISTS', st) == 1
  redis.call('HSET', st, 'ready', '1')
  keepttl(st, ttl, e)
end

-- unsearch takes session id out of the namespace keys: its pairs and its
-- share of the counts.
local function unsearch(pairs, st, id)
  local lo, hi = '[s:' .. id .. ':', '(s:' .. id .. ';'
  local ms = redis.call('ZRANGEBYLEX', pairs, lo, hi)
  for i = 1, #ms, 500 do
    local a = {}
    for j = i, math.min(i + 499, #ms) do a[#a + 1] = 't:' .. string.sub(ms[j], #id + 4) .. ':' .. id end
    redis.call('ZREM', pairs, unpack(a))
  end
  if #ms > 0 then redis.call('ZREMRANGEBYLEX', pairs, lo, hi) end
  local f = redis.call('HMGET', st, 'n:' .. id, 'l:' .. id)
  if f[1] then redis.call('HINCRBY', st, 'n', -tonumber(f[1])) end
  if f[2] then redis.call('HINCRBY', st, 'len', -tonumber(f[2])) end
  if f[1] or f[2] then redis.call('HDEL', st, 'n:' .. id, 'l:' .. id) end
end

-- searched indexes an append's events, whose text index ARGV[b] to
-- ARGV[b + 3] hold (postings, hashes, documents, tokens: see
-- indexEvents): the postings into the session's terms (touch, after,
-- gives them the session's TTL) and, unless the store is split, the
-- pairs and counts into the namespace keys.
local function searched(b, id, ttl)
  if ARGV[b] ~= '' then zaddall(terms(), words(ARGV[b])) end
  if KEYS[3] then
    local pairs, st = searchkeys(sidepfx(KEYS[3]))
    hint(pairs, id, ARGV[b + 1], ttl)
    tally(st, id, ARGV[b + 2], ARGV[b + 3], ttl)
  end
end
`

// hintScript records a session's tokens in the namespace keys: a split
// store's step before the append script.
//
//	KEYS: pairs
//	ARGV: id, hashes, ttl
var hintScript = goredis.NewScript(luaHelpers + searchHelpers + `
hint(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
return 'OK'
`)

// tallyScript counts a session's new documents: a split store's step
// after the append script.
//
//	KEYS: stats
//	ARGV: id, documents, tokens, ttl
var tallyScript = goredis.NewScript(luaHelpers + searchHelpers + `
tally(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
return 'OK'
`)

// unsearchScript takes a session out of the namespace keys: a split
// store's step after a deletion.
//
//	KEYS: pairs, stats
//	ARGV: id
var unsearchScript = goredis.NewScript(luaHelpers + searchHelpers + `
unsearch(KEYS[1], KEYS[2], ARGV[1])
return 'OK'
`)

// textIndex is what an append adds to the text index.
type textIndex struct {
	postings string // HASH:SEQ:TF:DL for each distinct token of each event, space-separated
	hashes   string // the distinct token hashes of all the events, space-separated
	docs     int    // the events with a token
	tokens   int    // their tokens
}

// indexEvents returns the text index of events: each event whose
// SearchText has a token is a document.
func indexEvents(events []cairn.Event) textIndex {
	var (
		ix     textIndex
		post   strings.Builder
		hashes strings.Builder
		seen   map[string]string // token → hash, for this append
	)
	for _, e := range events {
		toks := longterm.Tokens(e.SearchText())
		if len(toks) == 0 {
			continue
		}
		if seen == nil {
			seen = map[string]string{}
		}
		ix.docs++
		ix.tokens += len(toks)
		tf := make(map[string]int, len(toks))
		for _, t := range toks {
			tf[t]++
		}
		tail := ":" + strconv.FormatInt(e.Seq, 10) + ":"
		dl := ":" + strconv.Itoa(len(toks))
		post.Grow(len(tf) * (len(tail) + len(dl) + 20))
		for _, t := range toks {
			n := tf[t]
			if n == 0 {
				continue // written already
			}
			tf[t] = 0
			h, ok := seen[t]
			if !ok {
				h = TokenHash(t)
				seen[t] = h
				if hashes.Len() > 0 {
					hashes.WriteByte(' ')
				}
				hashes.WriteString(h)
			}
			if post.Len() > 0 {
				post.WriteByte(' ')
			}
			post.WriteString(h)
			post.WriteString(tail)
			post.WriteString(strconv.Itoa(n))
			post.WriteString(dl)
		}
	}
	ix.postings, ix.hashes = post.String(), hashes.String()
	return ix
}

// args returns ix as the append scripts take it.
func (ix textIndex) args() []any { return []any{ix.postings, ix.hashes, ix.docs, ix.tokens} }

// searchKeys returns the namespace keys of the text index: its pairs and
// its statistics.
func (s *Store) searchKeys() []string {
	return []string{s.side("search:pairs"), s.side("search:stats")}
}

// termsKey returns the key of session id's postings.
func (s *Store) termsKey(id string) string { return s.prefix + s.tag(id) + ":terms" }

// hint records session id's tokens in the namespace keys (a split store,
// before the append script).
func (s *Store) hint(ctx context.Context, id string, ix textIndex) error {
	if ix.hashes == "" {
		return nil
	}
	_, err := retry(ctx, func(ctx context.Context) (any, error) {
		return hintScript.Run(ctx, s.client, s.searchKeys()[:1], id, ix.hashes, s.ttl).Result()
	})
	return err
}

// tally counts an append's documents in (a split store, after the append
// script). A lost reply is not sent again: it might count twice.
func (s *Store) tally(ctx context.Context, id string, ix textIndex) error {
	if ix.docs == 0 {
		return nil
	}
	return tallyScript.Run(ctx, s.client, s.searchKeys()[1:], id, ix.docs, ix.tokens, s.ttl).Err()
}

// unsearch takes session ids out of the namespace keys, in one pipeline
// (a split store, after their deletion, or a Create of the ID). A session
// written again with the same ID between the deletion and this step loses
// the pairs of its tokens: a Delete and a Create of one ID racing on a
// cluster.
func (s *Store) unsearch(ctx context.Context, ids ...string) error {
	switch len(ids) {
	case 0:
		return nil
	case 1:
		return unsearchScript.Run(ctx, s.client, s.searchKeys(), ids[0]).Err()
	}
	if err := unsearchScript.Load(ctx, s.client).Err(); err != nil {
		return err
	}
	_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, id := range ids {
			unsearchScript.EvalSha(ctx, p, s.searchKeys(), id)
		}
		return nil
	})
	return err
}

// enrollTextScript indexes events of a live session that its postings lack:
// the indexing of a namespace written by an earlier version of the store.
// An event whose first posting is there is indexed already.
//
//	KEYS: meta, events[, index, claims]
//	ARGV: now, id, ttl, hashes, postings of an event...
//	returns {documents, tokens} added
var enrollTextScript = goredis.NewScript(luaHelpers + sideHelpers + searchHelpers + `
local cur = redis.call('HMGET', KEYS[1], 'expires_at', 'last_seq')
if not cur[2] or expired(cur[1], ARGV[1]) then return {0, 0} end
local tk = terms()
local docs, len = 0, 0
for i = 5, #ARGV do
  local ps = words(ARGV[i])
  if #ps > 0 and not redis.call('ZSCORE', tk, ps[1]) then
    zaddall(tk, ps)
    docs = docs + 1
    len = len + tonumber(string.match(ps[1], ':(%d+)$'))
  end
end
if docs > 0 then
  local pt = redis.call('PTTL', KEYS[1])
  if pt > 0 then redis.call('PEXPIRE', tk, pt) else redis.call('PERSIST', tk) end
end
if KEYS[3] then
  local pairs, st = searchkeys(sidepfx(KEYS[3]))
  hint(pairs, ARGV[2], ARGV[4], ARGV[3])
  tally(st, ARGV[2], docs, len, ARGV[3])
end
return {docs, len}
`)

// readyScript marks the text index of the namespace complete.
//
//	KEYS: stats
//	ARGV: ttl
var readyScript = goredis.NewScript(luaHelpers + searchHelpers + `
ready(KEYS[1], ARGV[1])
return 'OK'
`)

// enrollBatch is how many sessions searchReady reads at once, and
// enrollEvents how many events of a session one enrollTextScript takes.
const (
	enrollBatch  = 100
	enrollEvents = 500
)

// searchReady makes sure the text index is complete: if the namespace is
// not marked so (it was written by an earlier version of the store, which
// kept no text index, or its statistics expired while sessions lived on),
// it indexes the events of every session in the namespace index first,
// those that are not indexed yet, then marks it. Its cost follows the
// namespace's events, once. Writes that run meanwhile index their own
// events; those of processes of the earlier version are not indexed.
func (s *Store) searchReady(ctx context.Context) error {
	stats := s.searchKeys()[1]
	s.searchMu.Lock()
	defer s.searchMu.Unlock()
	switch err := s.client.HGet(ctx, stats, "ready").Err(); {
	case err == nil:
		return nil // marked meanwhile
	case !errors.Is(err, goredis.Nil):
		return err
	}
	for _, sc := range []*goredis.Script{enrollTextScript, hintScript, tallyScript} {
		if err := sc.Load(ctx, s.client).Err(); err != nil {
			return err
		}
	}
	if err := s.scanIndex(ctx, enrollBatch, func(ids []string) error { return s.enroll(ctx, ids) }); err != nil {
		return err
	}
	return readyScript.Run(ctx, s.client, []string{stats}, s.ttl).Err()
}

// enrollCall is one run of enrollTextScript.
type enrollCall struct {
	id     string
	hashes string
	args   []any
	cmd    *goredis.Cmd
}

// enroll indexes the events of the live sessions of ids that are not
// indexed yet: one pipeline of reads, one of enrollTextScript runs (a split
// store: of hintScript runs before, of tallyScript runs after).
func (s *Store) enroll(ctx context.Context, ids []string) error {
	metas := make([]*goredis.SliceCmd, len(ids))
	evs := make([]*goredis.StringSliceCmd, len(ids))
	if _, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, id := range ids {
			metas[i] = p.HMGet(ctx, s.metaKey(id), "expires_at", "last_seq")
			evs[i] = p.LRange(ctx, s.eventsKey(id), 0, -1)
		}
		return nil
	}); err != nil {
		return err
	}
	now := s.now()
	var calls []*enrollCall
	for i, id := range ids {
		v := metas[i].Val()
		if exp, _ := v[0].(string); v[1] == nil || driver.Expired(fromNanos(exp), now) {
			continue
		}
		raw := evs[i].Val()
		for len(raw) > 0 {
			chunk := raw[:min(len(raw), enrollEvents)]
			raw = raw[len(chunk):]
			if c := s.enrollChunk(id, now, chunk); c != nil {
				calls = append(calls, c)
			}
		}
	}
	if len(calls) == 0 {
		return nil
	}
	if s.split {
		if _, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, c := range calls {
				hintScript.EvalSha(ctx, p, s.searchKeys()[:1], c.id, c.hashes, s.ttl)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if _, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, c := range calls {
			c.cmd = enrollTextScript.EvalSha(ctx, p, s.scriptKeys(c.id), c.args...)
		}
		return nil
	}); err != nil {
		return err
	}
	if !s.split {
		return nil
	}
	_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, c := range calls {
			if added, _ := c.cmd.Int64Slice(); len(added) == 2 && added[0] > 0 {
				tallyScript.EvalSha(ctx, p, s.searchKeys()[1:], c.id, added[0], added[1], s.ttl)
			}
		}
		return nil
	})
	return err
}

// enrollChunk returns the enrollTextScript run for raw, stored events of
// session id, or nil when none of them has a token.
func (s *Store) enrollChunk(id string, now time.Time, raw []string) *enrollCall {
	c := &enrollCall{id: id}
	hashes := map[string]bool{}
	var hs []string
	for _, r := range raw {
		e, ok := decodeEnvelope(r)
		if !ok {
			continue
		}
		ix := indexEvents([]cairn.Event{e})
		if ix.docs == 0 {
			continue
		}
		c.args = append(c.args, ix.postings)
		for _, h := range strings.Fields(ix.hashes) {
			if !hashes[h] {
				hashes[h] = true
				hs = append(hs, h)
			}
		}
	}
	if len(c.args) == 0 {
		return nil
	}
	c.hashes = strings.Join(hs, " ")
	c.args = append([]any{nanos(now), id, s.ttl, c.hashes}, c.args...)
	return c
}
