package redis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/unixnano"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

func init() {
	ltdriver.RegisterByNamespace(func(ctx context.Context, rawURL string, opts longterm.Options) (longterm.Store, error) {
		return OpenLongTerm(ctx, rawURL, LongTermOptions{Options: opts})
	}, "redis", "rediss")
}

// LongTermOptions configure OpenLongTerm and NewLongTerm: Namespace is the
// session namespace whose key prefix the memory shares (cairn.DefaultNamespace
// when empty).
type LongTermOptions struct {
	longterm.Options
}

// LongTerm is a longterm.Store on Redis (standalone, Sentinel or Cluster),
// with a text index of its own, as Redis without modules has none.
//
// Every key of one namespace's long-term memory holds the hash tag
// {NAMESPACE/longterm}, so all of them live in one Cluster slot: each
// write is one Lua script, atomic on Cluster too, and the memory of one
// namespace lives on one node (spread memories over several namespaces
// to spread them over a cluster). The keys, under
// "cairn:NAMESPACE:{NAMESPACE/longterm}:":
//
//	i:PATH\x00KEY  a hash per item: its fields, its text's token hashes
//	paths          a sorted set of every item's PATH\x00KEY, scores 0,
//	               read by lexical range (List, Namespaces, prefixes)
//	exp            a sorted set of the items that expire, by expiry (µs)
//	t:HASH         a set per token: the items whose text holds it, named
//	               by 16 hex digits of the token's SHA-256, not the word
//	stats          a hash of the item count and their texts' total length
//	rev            the version counter
//
// Search computes BM25 over the items the token sets name, as the
// memory backend does, and cosine over the vectors of the items under the
// search's prefix, read from their hashes. Deleting an item or a
// namespace removes its hash, its members of paths and exp and of every
// token set (an emptied set is gone).
type LongTerm struct {
	client goredis.UniversalClient
	owned  bool
	opts   longterm.Options
	base   string
	guard  ltdriver.Guard
}

var (
	_ longterm.Store   = (*LongTerm)(nil)
	_ longterm.Sweeper = (*LongTerm)(nil)
)

// OpenLongTerm connects to the Redis deployment a URL names, as Open
// does, and returns the long-term memory there, owning the client: Close
// closes it.
func OpenLongTerm(ctx context.Context, rawURL string, opts LongTermOptions) (*LongTerm, error) {
	uo, err := ParseStoreURL(rawURL)
	if err != nil {
		return nil, err
	}
	client, err := uo.dial(ctx, "redis memory store")
	if err != nil {
		return nil, err
	}
	s, err := NewLongTerm(client, opts)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// NewLongTerm returns the long-term memory on a client the caller owns:
// Close leaves it open. Any go-redis client works, a Cluster client
// included; make it as ParseURL does (see New).
func NewLongTerm(client goredis.UniversalClient, opts LongTermOptions) (*LongTerm, error) {
	if client == nil {
		return nil, errors.New("redis memory store: nil client")
	}
	ns, err := ltdriver.SessionNamespace(opts.Options)
	if err != nil {
		return nil, err
	}
	return &LongTerm{client: client, opts: opts.Options.WithDefaults(), base: "cairn:" + ns + ":{" + ns + "/longterm}:"}, nil
}

// KeyPrefix returns the prefix of every key of the store.
func (s *LongTerm) KeyPrefix() string { return s.base }

// Close implements longterm.Store. It closes the client only if
// OpenLongTerm made it.
func (s *LongTerm) Close() error {
	if !s.guard.Close() || !s.owned {
		return nil
	}
	if err := s.client.Close(); err != nil {
		return fmt.Errorf("close redis memory store: %w", err)
	}
	return nil
}

func (s *LongTerm) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, longterm.ErrNotFound) || errors.Is(err, longterm.ErrConflict) {
		return err
	}
	if s.guard.Closed() {
		err = cairn.ErrClosed
	}
	unavailable(&err)
	return fmt.Errorf("%s: %w", op, err)
}

// keys of the store.
func (s *LongTerm) itemKey(member string) string { return s.base + "i:" + member }
func (s *LongTerm) keys() []string {
	return []string{s.base + "paths", s.base + "exp", s.base + "stats", s.base + "rev"}
}

// member is an item's member of the paths set: its namespace's path, NUL
// and its key, which order as List does.
func member(ns, key string) string { return longterm.PathOrder(ns) + "\x00" + key }

// TokenHash names a token in the index: 16 hex digits of its SHA-256.
func TokenHash(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:8])
}

// stamp is a time as the hashes hold it: Unix nanoseconds (unixnano.Of,
// which holds a time past 2262 at its end rather than wrapping), 20
// digits with leading zeros (so that Lua compares them as strings), ""
// for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return fmt.Sprintf("%020d", unixnano.Of(t))
}

func unstamp(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.Unix(0, n).UTC()
}

// docLength is an item's length for BM25, as ltdriver.Index counts it.
func docLength(ns string, toks []string) int { return len(toks) + strings.Count(ns, "/") + 1 }

// ltHelpers erase an item inside a script: its hash, its members of
// paths and exp, of every token set, and its share of the stats.
const ltHelpers = `
local function erase(base, m)
  local ik = base .. 'i:' .. m
  local f = redis.call('HMGET', ik, 'toks', 'dl')
  if f[1] then
    for h in string.gmatch(f[1], '%S+') do
      redis.call('SREM', base .. 't:' .. h, m)
    end
  end
  redis.call('DEL', ik)
  redis.call('ZREM', base .. 'paths', m)
  redis.call('ZREM', base .. 'exp', m)
  redis.call('HINCRBY', base .. 'stats', 'n', -1)
  redis.call('HINCRBY', base .. 'stats', 'len', -tonumber(f[2] or '0'))
end
local function expired(ea, now)
  return ea ~= nil and ea ~= false and ea ~= '' and ea <= now
end
`

// ltPutScript puts an item. KEYS: paths, exp, stats, rev, the item's
// hash. ARGV: base, member, now, if_version, then the item's fields as
// name, value pairs (toks, dl, ea and eu among them). It returns
// {1, version, created} or {0, current version} for a conflict.
var ltPutScript = goredis.NewScript(ltHelpers + `
local base, m, now, ifv = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local ik = KEYS[5]
local old = redis.call('HMGET', ik, 'ver', 'ca', 'ea', 'toks', 'dl')
local exists = old[1] ~= false
local cur = 0
if exists and not expired(old[3], now) then cur = tonumber(old[1]) end
if (ifv == -1 and cur ~= 0) or (ifv > 0 and cur ~= ifv) then return {0, cur} end
local rev = redis.call('INCR', KEYS[4])
local ca = now
if cur ~= 0 then ca = old[2] end
if exists then
  for h in string.gmatch(old[4] or '', '%S+') do
    redis.call('SREM', base .. 't:' .. h, m)
  end
  redis.call('DEL', ik)
else
  redis.call('HINCRBY', KEYS[3], 'n', 1)
end
local fields = {'ver', rev, 'ca', ca, 'ua', now}
local toks, dl, ea, eu = '', 0, '', ''
for i = 5, #ARGV, 2 do
  local k, v = ARGV[i], ARGV[i + 1]
  if k == 'toks' then toks = v elseif k == 'dl' then dl = tonumber(v) elseif k == 'eu' then eu = v else
    if k == 'ea' then ea = v end
    fields[#fields + 1] = k
    fields[#fields + 1] = v
  end
end
fields[#fields + 1] = 'toks'
fields[#fields + 1] = toks
fields[#fields + 1] = 'dl'
fields[#fields + 1] = dl
redis.call('HSET', ik, unpack(fields))
for h in string.gmatch(toks, '%S+') do
  redis.call('SADD', base .. 't:' .. h, m)
end
redis.call('HINCRBY', KEYS[3], 'len', dl - tonumber(old[5] or '0'))
redis.call('ZADD', KEYS[1], 0, m)
if ea ~= '' then redis.call('ZADD', KEYS[2], eu, m) else redis.call('ZREM', KEYS[2], m) end
return {1, rev, ca}
`)

// ltDeleteScript deletes an item. KEYS: paths, exp, stats, rev, the
// item's hash. ARGV: base, member, now, if_version. It returns {1} when
// it deleted, {-1} when there was no live item (an expired one is erased
// all the same), {0, current version} for a conflict.
var ltDeleteScript = goredis.NewScript(ltHelpers + `
local base, m, now, ifv = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local old = redis.call('HMGET', KEYS[5], 'ver', 'ea')
if not old[1] then return {-1} end
if expired(old[2], now) then
  erase(base, m)
  return {-1}
end
local cur = tonumber(old[1])
if ifv > 0 and cur ~= ifv then return {0, cur} end
erase(base, m)
return {1}
`)

// ltDeleteRangeScript erases at most a batch of the items whose members
// are in a lexical range. KEYS: paths, exp, stats, rev. ARGV: base, lo
// (inclusive), hi (exclusive), now, batch. It returns {erased, live}.
var ltDeleteRangeScript = goredis.NewScript(ltHelpers + `
local base, now = ARGV[1], ARGV[4]
local ms = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[2], '(' .. ARGV[3], 'LIMIT', 0, tonumber(ARGV[5]))
local live = 0
for _, m in ipairs(ms) do
  if not expired(redis.call('HGET', base .. 'i:' .. m, 'ea'), now) then live = live + 1 end
  erase(base, m)
end
return {#ms, live}
`)

// ltSweepScript erases at most a batch of expired items. KEYS: paths,
// exp, stats, rev. ARGV: base, now in µs, now, batch. It returns
// {seen, erased}.
var ltSweepScript = goredis.NewScript(ltHelpers + `
local base, now = ARGV[1], ARGV[3]
local ms = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[4]))
local n = 0
for _, m in ipairs(ms) do
  if expired(redis.call('HGET', base .. 'i:' .. m, 'ea'), now) then
    erase(base, m)
    n = n + 1
  else
    redis.call('ZREM', KEYS[2], m)
  end
end
return {#ms, n}
`)

// ltBatch is how many items one script erases at most.
const ltBatch = 500

// Put implements longterm.Store: one script, atomic.
func (s *LongTerm) Put(ctx context.Context, item longterm.Item, opts longterm.PutOptions) (*longterm.Item, error) {
	item, err := s.guard.Put(ctx, s.opts, item, opts)
	if err != nil {
		return nil, err
	}
	labels := ""
	if len(item.Labels) > 0 {
		b, err := json.Marshal(item.Labels)
		if err != nil {
			return nil, err
		}
		labels = string(b)
	}
	now := ltdriver.Now(s.opts)
	var exp time.Time
	if opts.TTL > 0 {
		exp = now.Add(opts.TTL)
	}
	toks := longterm.Tokens(item.Text)
	seen := map[string]bool{}
	var hashes []string
	for _, t := range toks {
		if h := TokenHash(t); !seen[h] {
			seen[h] = true
			hashes = append(hashes, h)
		}
	}
	m := member(item.Namespace, item.Key)
	args := []any{s.base, m, stamp(now), opts.IfVersion,
		"ns", item.Namespace, "key", item.Key, "value", string(item.Value), "text", item.Text, "labels", labels,
		"vec", string(ltdriver.EncodeVector(item.Vector)), "model", item.VectorModel,
		"ss", item.Source.Session, "sq", item.Source.Seq, "ea", stamp(exp),
		"toks", strings.Join(hashes, " "), "dl", docLength(item.Namespace, toks)}
	if !exp.IsZero() {
		args = append(args, "eu", (unixnano.Of(exp)-1)/1000+1) // microseconds, rounded up
	}
	res, err := ltPutScript.Run(ctx, s.client, append(s.keys(), s.itemKey(m)), args...).Slice()
	if err != nil {
		return nil, s.fail("put "+item.Namespace+" "+item.Key, err)
	}
	if res[0].(int64) == 0 {
		if err := ltdriver.Admit(item.Namespace, item.Key, res[1].(int64), opts.IfVersion); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s %s", longterm.ErrConflict, item.Namespace, item.Key)
	}
	var old *longterm.Item
	if ca := unstamp(res[2].(string)); !ca.Equal(now) {
		old = &longterm.Item{CreatedAt: ca}
	}
	ltdriver.Stamp(&item, old, res[1].(int64), now, opts.TTL)
	return &item, nil
}

// Delete implements longterm.Store: one script, atomic.
func (s *LongTerm) Delete(ctx context.Context, namespace, key string, ifVersion int64) error {
	if err := s.guard.Delete(namespace, key, ifVersion); err != nil {
		return err
	}
	m := member(namespace, key)
	res, err := ltDeleteScript.Run(ctx, s.client, append(s.keys(), s.itemKey(m)), s.base, m, stamp(ltdriver.Now(s.opts)), ifVersion).Slice()
	if err != nil {
		return s.fail("delete "+namespace+" "+key, err)
	}
	switch res[0].(int64) {
	case -1:
		return ltdriver.NotFound(namespace, key)
	case 0:
		return ltdriver.Admit(namespace, key, res[1].(int64), ifVersion)
	}
	return nil
}

// DeleteNamespace implements longterm.Store: scripts of ltBatch items
// each, through the lexical range of the prefix, until it is empty. A
// Put that lands between two scripts lands before one of them (and is
// erased) or after the last (and stays).
func (s *LongTerm) DeleteNamespace(ctx context.Context, prefix string) (int, error) {
	if err := s.guard.DeleteNamespace(prefix); err != nil {
		return 0, err
	}
	lo, hi := longterm.PrefixRange(prefix)
	now := stamp(ltdriver.Now(s.opts))
	return s.inBatches("delete namespace "+prefix, func() ([]int64, error) {
		return ltDeleteRangeScript.Run(ctx, s.client, s.keys(), s.base, lo, hi, now, ltBatch).Int64Slice()
	})
}

// Sweep implements longterm.Sweeper: scripts of ltBatch items each,
// through the expiry set.
func (s *LongTerm) Sweep(ctx context.Context) (int, error) {
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	now := ltdriver.Now(s.opts)
	return s.inBatches("sweep", func() ([]int64, error) {
		return ltSweepScript.Run(ctx, s.client, s.keys(), s.base, now.UnixNano()/1000, stamp(now), ltBatch).Int64Slice()
	})
}

// inBatches runs a script of ltBatch items at a time, run, until one
// reaches fewer, and returns how many items the scripts erased; a script
// answers how many items it reached and how many it erased.
func (s *LongTerm) inBatches(op string, run func() ([]int64, error)) (int, error) {
	total := 0
	for {
		res, err := run()
		if err != nil {
			return total, s.fail(op, err)
		}
		total += int(res[1])
		if res[0] < ltBatch {
			return total, nil
		}
	}
}

// ltFields are the fields of an item's hash that make an item, in the
// order readItem takes them.
var ltFields = []string{"ns", "key", "value", "text", "labels", "model", "ss", "sq", "ver", "ca", "ua", "ea"}

// readItem makes an item of the values of ltFields, and of its vector
// field when vec is set. ok is false for a hash that is gone.
func readItem(vals []any, vec any) (it longterm.Item, ok bool, err error) {
	str := func(i int) string { v, _ := vals[i].(string); return v }
	if vals[0] == nil {
		return it, false, nil
	}
	it.Namespace, it.Key, it.Value, it.Text = str(0), str(1), json.RawMessage(str(2)), str(3)
	if l := str(4); l != "" {
		if err := json.Unmarshal([]byte(l), &it.Labels); err != nil {
			return it, false, fmt.Errorf("item %s %s: labels: %w", it.Namespace, it.Key, err)
		}
	}
	it.VectorModel, it.Source.Session = str(5), str(6)
	it.Source.Seq, _ = strconv.ParseInt(str(7), 10, 64)
	it.Version, _ = strconv.ParseInt(str(8), 10, 64)
	it.CreatedAt, it.UpdatedAt, it.ExpiresAt = unstamp(str(9)), unstamp(str(10)), unstamp(str(11))
	if v, _ := vec.(string); v != "" {
		if it.Vector, err = ltdriver.DecodeVector([]byte(v)); err != nil {
			return it, false, fmt.Errorf("item %s %s: %w", it.Namespace, it.Key, err)
		}
	}
	return it, true, nil
}

// getItems reads the items of members in one pipeline, with their
// vectors when vec is set; a member whose hash is gone is left out (its
// place is a zero item with ok false).
func (s *LongTerm) getItems(ctx context.Context, members []string, vec bool) ([]longterm.Item, []bool, error) {
	fields := ltFields
	if vec {
		fields = append(slices.Clone(ltFields), "vec")
	}
	cmds := make([]*goredis.SliceCmd, len(members))
	_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, m := range members {
			cmds[i] = p.HMGet(ctx, s.itemKey(m), fields...)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	items := make([]longterm.Item, len(members))
	oks := make([]bool, len(members))
	for i, c := range cmds {
		vals := c.Val()
		var v any
		if vec {
			v = vals[len(ltFields)]
		}
		it, ok, err := readItem(vals, v)
		if err != nil {
			return nil, nil, err
		}
		items[i], oks[i] = it, ok
	}
	return items, oks, nil
}

// Get implements longterm.Store.
func (s *LongTerm) Get(ctx context.Context, namespace, key string) (*longterm.Item, error) {
	if err := s.guard.Key(namespace, key); err != nil {
		return nil, err
	}
	items, oks, err := s.getItems(ctx, []string{member(namespace, key)}, true)
	if err != nil {
		return nil, s.fail("get "+namespace+" "+key, err)
	}
	if !oks[0] || ltdriver.Expired(items[0].ExpiresAt, ltdriver.Now(s.opts)) {
		return nil, ltdriver.NotFound(namespace, key)
	}
	return &items[0], nil
}

// List implements longterm.Store: the lexical range of the prefix in the
// paths set, from the cursor on, a chunk at a time, each chunk's items
// read in one pipeline and filtered.
func (s *LongTerm) List(ctx context.Context, opts longterm.ListOptions) (*longterm.ListPage, error) {
	opts, cur, err := s.guard.List(opts)
	if err != nil {
		return nil, err
	}
	lo, hi := "-", "+"
	if opts.Prefix != "" {
		p, h := longterm.PrefixRange(opts.Prefix)
		lo, hi = "["+p, "("+h
	}
	if !cur.IsZero() {
		if c := "(" + member(cur.Namespace, cur.Key); lo == "-" || c[1:] >= lo[1:] {
			lo = c
		}
	}
	now := ltdriver.Now(s.opts)
	var found []longterm.Item
	chunk := opts.Limit + 1
	for len(found) <= opts.Limit {
		ms, err := s.client.ZRangeByLex(ctx, s.base+"paths", &goredis.ZRangeBy{Min: lo, Max: hi, Count: int64(chunk)}).Result()
		if err != nil {
			return nil, s.fail("list", err)
		}
		items, oks, err := s.getItems(ctx, ms, opts.Vectors)
		if err != nil {
			return nil, s.fail("list", err)
		}
		for i, it := range items {
			if oks[i] && !ltdriver.Expired(it.ExpiresAt, now) && ltdriver.MatchLabels(opts.Labels, it.Labels) {
				found = append(found, it)
			}
		}
		if len(ms) < chunk {
			break
		}
		lo = "(" + ms[len(ms)-1]
		chunk = min(2*chunk, 4*longterm.MaxListLimit)
	}
	return ltdriver.Page(found, opts.Limit), nil
}

// Namespaces implements longterm.Store by skipping through the paths
// set: one seek per namespace listed, and, with a depth, one per
// namespace cut.
func (s *LongTerm) Namespaces(ctx context.Context, opts longterm.NamespaceOptions) (*longterm.NamespacePage, error) {
	opts, err := s.guard.Namespaces(opts)
	if err != nil {
		return nil, err
	}
	now := ltdriver.Now(s.opts)
	return ltdriver.SkipNamespaces(opts, func(pos, hi string, inclusive bool) (string, bool, error) {
		// A member is path NUL key: pos itself is "[pos", past every
		// member of pos is "[pos\x01".
		lo := "[" + pos
		if !inclusive {
			lo += "\x01"
		}
		for {
			ms, err := s.client.ZRangeByLex(ctx, s.base+"paths", &goredis.ZRangeBy{Min: lo, Max: "(" + hi, Count: 1}).Result()
			if err != nil {
				return "", false, s.fail("namespaces", err)
			}
			if len(ms) == 0 {
				return "", false, nil
			}
			exp, err := s.client.HGet(ctx, s.itemKey(ms[0]), "ea").Result()
			if err != nil && !errors.Is(err, goredis.Nil) {
				return "", false, s.fail("namespaces", err)
			}
			if errors.Is(err, goredis.Nil) || ltdriver.Expired(unstamp(exp), now) {
				lo = "(" + ms[0]
				continue
			}
			path, _, _ := strings.Cut(ms[0], "\x00")
			return strings.ReplaceAll(path, " ", "/"), true, nil
		}
	})
}
