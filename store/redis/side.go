package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
)

// The side indexes (<side>ids, <side>expiry, <side>status:<st> and
// <side>label:<len(k)>:<k>=<v>, where <side> is
// cairn:<ns>:{cairn:<ns>:sessions}:) serve ID prefixes, status and label
// filters and expiry. Their hash tag is the namespace index's name, so one
// script updates them with the index: on a single server the session
// scripts, in the same atomic step as the session; on a split store
// (Cluster, Ring) placeScript, on the index's slot, after each write.
// Key layout: docs/STORES.md, "The Redis store".

// sideHelpers is prepended to the scripts that keep the side indexes.
// It needs luaHelpers.
var sideHelpers = strings.Replace(sideLua, "BUILTIN_STATUSES", luaStrings(builtinStatuses), 1)

// luaStrings returns statuses as the items of a Lua table.
func luaStrings(statuses []cairn.Status) string {
	q := make([]string, len(statuses))
	for i, st := range statuses {
		q[i] = "'" + string(st) + "'"
	}
	return strings.Join(q, ", ")
}

const sideLua = `
-- sidepfx returns the prefix of the side indexes of the namespace whose
-- index key is idx ("cairn:<ns>:sessions").
local function sidepfx(idx)
  return string.sub(idx, 1, -9) .. '{' .. idx .. '}:'
end

-- expscore turns expires_at (Unix ns, a decimal string) into a score of
-- the expiry set (Unix µs, rounded down), or nil for never.
local function expscore(exp)
  if not exp or exp == '' or exp == '0' then return nil end
  if #exp <= 3 then return '0' end
  return string.sub(exp, 1, -4)
end

local function labelkey(p, k, v)
  return p .. 'label:' .. #k .. ':' .. k .. '=' .. v
end

-- eachlabel calls f with the key of every label set of the labels JSON.
local function eachlabel(p, labels, f)
  local ok, l = pcall(cjson.decode, labels or '{}')
  if not ok or type(l) ~= 'table' then return end
  for k, v in pairs(l) do
    if type(k) == 'string' and type(v) == 'string' then f(labelkey(p, k, v)) end
  end
end

-- place puts session id into the side indexes with prefix p: the ID set,
-- the expiry set (exp in Unix ns, "0": never), the set of its status and
-- those of its labels, scored by its updated time.
local function place(p, id, status, labels, score, exp, ttl)
  index(p .. 'ids', 0, id, ttl, '0')
  local e = expscore(exp)
  if e then
    index(p .. 'expiry', e, id, ttl, '0')
  else
    redis.call('ZREM', p .. 'expiry', id)
  end
  if status and status ~= '' then index(p .. 'status:' .. status, score, id, ttl, '0') end
  eachlabel(p, labels, function(k) index(k, score, id, ttl, '0') end)
end

-- unplace takes session id out of the side indexes with prefix p; status
-- and labels may be false when unknown (the session's keys are gone): then
-- it leaves every built-in status set, and label sets keep the entry until
-- a List that walks them prunes it.
local function unplace(p, id, status, labels)
  redis.call('ZREM', p .. 'ids', id)
  redis.call('ZREM', p .. 'expiry', id)
  if status and status ~= '' then
    redis.call('ZREM', p .. 'status:' .. status, id)
  elseif not status then
    for _, st in ipairs({BUILTIN_STATUSES}) do
      redis.call('ZREM', p .. 'status:' .. st, id)
    end
  end
  if labels then eachlabel(p, labels, function(k) redis.call('ZREM', k, id) end) end
end

-- reside follows a write of the session in the side indexes (single
-- server): out of the set of its old status if new ("" unchanged) differs,
-- into the sets of its status and labels at score, and into the expiry
-- set at exp. labels is the session's labels field, read from the meta
-- when nil.
local function reside(old, new, id, score, exp, ttl, labels)
  local p = sidepfx(KEYS[3])
  local st = old
  if new ~= '' and new ~= old then
    if old then redis.call('ZREM', p .. 'status:' .. old, id) end
    st = new
  end
  if labels == nil then labels = redis.call('HGET', KEYS[1], 'labels') end
  place(p, id, st, labels, score, exp, ttl)
end
`

// placeScript is the index update of a split store after a write, and
// List's repair: it sets the session's score in the namespace index and
// puts it in the side indexes as its meta says, and out of the other
// status sets. With gt "1" it does nothing when the index holds a later
// score for the session (an update of a later write ran first). It keeps
// the text index's namespace keys alive as long as the namespace index
// (searchindex.go), and marks the text index complete when the namespace
// had no index yet.
//
//	KEYS: index, ids, expiry, status set, label set... (n_labels), other
//	      status set...
//	ARGV: id, score, expires_at, ttl, gt, n_labels
//	returns "OK" or "STALE"
var placeScript = goredis.NewScript(luaHelpers + searchHelpers + `
local id, score, ttl = ARGV[1], ARGV[2], ARGV[4]
local pairs, st = searchkeys(string.sub(KEYS[2], 1, -4))
keepttl(pairs, ttl, true)
keepttl(st, ttl, true)
if ARGV[5] == '1' then
  local cur = redis.call('ZSCORE', KEYS[1], id)
  if cur and tonumber(cur) > tonumber(score) then return 'STALE' end
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  index(KEYS[2], 0, '', ttl, '0')
  ready(st, ttl)
end
index(KEYS[1], score, id, ttl, '0')
index(KEYS[2], 0, id, ttl, '0')
local exp = ARGV[3]
if exp ~= '' and exp ~= '0' then
  local e = '0'
  if #exp > 3 then e = string.sub(exp, 1, -4) end
  index(KEYS[3], e, id, ttl, '0')
else
  redis.call('ZREM', KEYS[3], id)
end
index(KEYS[4], score, id, ttl, '0')
local nl = tonumber(ARGV[6])
for i = 5, 4 + nl do index(KEYS[i], score, id, ttl, '0') end
for i = 5 + nl, #KEYS do redis.call('ZREM', KEYS[i], id) end
return 'OK'
`)

// unplaceScript takes a session out of the namespace index and the given
// side indexes: a split store's cleanup after a deletion.
//
//	KEYS: index, set...
//	ARGV: id
var unplaceScript = goredis.NewScript(`
for i = 1, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
return 'OK'
`)

// enrollSideScript puts a live session into the side indexes from its
// meta: the rebuild of the side indexes on a single server.
//
//	KEYS: meta, index
//	ARGV: now, id, ttl
//	returns 1 (placed) or 0
var enrollSideScript = goredis.NewScript(luaHelpers + sideHelpers + `
local cur = redis.call('HMGET', KEYS[1], 'expires_at', 'last_seq', 'status', 'labels', 'updated_at')
if not cur[2] or expired(cur[1], ARGV[1]) then return 0 end
local p = sidepfx(KEYS[2])
local score = redis.call('ZSCORE', KEYS[2], ARGV[2]) or '0'
place(p, ARGV[2], cur[3], cur[4], score, cur[1], ARGV[3])
return 1
`)

// builtinStatuses are the statuses a split store takes a session out of
// when it places it in the set of another.
var builtinStatuses = []cairn.Status{
	cairn.StatusNew, cairn.StatusRunning, cairn.StatusInterrupted, cairn.StatusAwaiting,
	cairn.StatusCompleted, cairn.StatusFailed, cairn.StatusMaxSteps, cairn.StatusDamaged,
}

// side returns the key of a side index (see the top of this file).
func (s *Store) side(name string) string {
	return s.prefix + "{" + s.index + "}:" + name
}

func (s *Store) idsKey() string                   { return s.side("ids") }
func (s *Store) expiryKey() string                { return s.side("expiry") }
func (s *Store) statusKey(st cairn.Status) string { return s.side("status:" + string(st)) }
func (s *Store) labelKey(k, v string) string {
	return s.side("label:" + strconv.Itoa(len(k)) + ":" + k + "=" + v)
}

// sideFields are the meta fields a split store reads to place a session.
var sideFields = []string{"expires_at", "last_seq", "status", "labels", "updated_at"}

// placed is what a split store reads of a session's meta to place it.
type placed struct {
	id      string
	live    bool
	status  cairn.Status
	labels  map[string]string
	updated int64  // the index score
	expires string // Unix ns, "0": never
}

// readPlaced decodes HMGET meta sideFields.
func readPlaced(id string, vals []any) placed {
	str := func(i int) string { v, _ := vals[i].(string); return v }
	p := placed{id: id, live: len(vals) == len(sideFields) && vals[1] != nil, status: cairn.Status(str(2)), expires: str(0)}
	if !p.live {
		return p
	}
	_ = json.Unmarshal([]byte(str(3)), &p.labels)
	if t, err := time.Parse(time.RFC3339Nano, str(4)); err == nil {
		p.updated = score(t)
	}
	return p
}

// place runs placeScript for p (a split store).
func (s *Store) place(ctx context.Context, pipe goredis.Cmdable, p placed, gt bool) *goredis.Cmd {
	keys := []string{s.index, s.idsKey(), s.expiryKey(), s.statusKey(p.status)}
	for k, v := range p.labels {
		keys = append(keys, s.labelKey(k, v))
	}
	for _, st := range builtinStatuses {
		if st != p.status {
			keys = append(keys, s.statusKey(st))
		}
	}
	g := "0"
	if gt {
		g = "1"
	}
	exp := p.expires
	if exp == "" {
		exp = "0"
	}
	return placeScript.EvalSha(ctx, pipe, keys, p.id, p.updated, exp, s.ttl, g, len(p.labels))
}

// reindex is the index update of a split store after a write of session
// id: it reads the meta and places the session as it says (a session gone
// meanwhile is left to the write that removed it).
func (s *Store) reindex(ctx context.Context, id string) error {
	_, err := retry(ctx, func(ctx context.Context) (string, error) {
		vals, err := s.client.HMGet(ctx, s.metaKey(id), sideFields...).Result()
		if err != nil {
			return "", err
		}
		p := readPlaced(id, vals)
		if !p.live {
			return "", nil
		}
		err = s.place(ctx, s.client, p, true).Err()
		if goredis.HasErrorPrefix(err, "NOSCRIPT") {
			err = placeScript.Load(ctx, s.client).Err()
			if err == nil {
				err = s.place(ctx, s.client, p, true).Err()
			}
		}
		return "", err
	})
	return err
}

// unplaceKeys returns the keys a split store removes a session from once
// it is gone: the namespace index, the ID and expiry sets, every built-in
// status set and that of status, the label sets of labels, and extra.
func (s *Store) unplaceKeys(status cairn.Status, labels map[string]string, extra string) []string {
	keys := []string{s.index, s.idsKey(), s.expiryKey()}
	for _, st := range builtinStatuses {
		keys = append(keys, s.statusKey(st))
	}
	if status != "" && !slices.Contains(builtinStatuses, status) {
		keys = append(keys, s.statusKey(status))
	}
	for k, v := range labels {
		keys = append(keys, s.labelKey(k, v))
	}
	if extra != "" {
		keys = append(keys, extra)
	}
	return keys
}

// sideReady makes sure the side indexes are complete: if the ID set has
// no marker (the namespace was written by an earlier version of the store,
// which kept no side indexes, or the set expired while sessions lived
// on), it builds them from the namespace index first, in one pass.
func (s *Store) sideReady(ctx context.Context) error {
	switch err := s.client.ZScore(ctx, s.idsKey(), "").Err(); {
	case err == nil:
		return nil
	case !errors.Is(err, goredis.Nil):
		return err
	}
	s.rebuildMu.Lock()
	defer s.rebuildMu.Unlock()
	switch err := s.client.ZScore(ctx, s.idsKey(), "").Err(); {
	case err == nil:
		return nil // built meanwhile
	case !errors.Is(err, goredis.Nil):
		return err
	}
	if err := s.rebuildSide(ctx); err != nil {
		return fmt.Errorf("build the side indexes: %w", err)
	}
	return nil
}

// scanIndex calls f with the IDs of the namespace index, a ZSCAN of count
// at a time, until the scan ends or f fails.
func (s *Store) scanIndex(ctx context.Context, count int64, f func(ids []string) error) error {
	var cursor uint64
	for {
		kv, next, err := s.client.ZScan(ctx, s.index, cursor, "", count).Result()
		if err != nil {
			return fmt.Errorf("scan %s: %w", s.index, err)
		}
		var ids []string
		for i := 0; i+1 < len(kv); i += 2 {
			ids = append(ids, kv[i])
		}
		if err := f(ids); err != nil {
			return err
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// enrollEach runs script sc for each session of ids, in one pipeline, on
// the session's meta and key, with now, the ID and the TTL.
func (s *Store) enrollEach(ctx context.Context, sc *goredis.Script, key, now string, ids []string) error {
	_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, id := range ids {
			sc.EvalSha(ctx, p, []string{s.metaKey(id), key}, now, id, s.ttl)
		}
		return nil
	})
	return err
}

// rebuildSide fills the side indexes from the namespace index, then adds
// the marker that says they are complete. Writes that run meanwhile keep
// the side indexes in step themselves.
func (s *Store) rebuildSide(ctx context.Context) error {
	for _, sc := range []*goredis.Script{enrollSideScript, placeScript} {
		if err := sc.Load(ctx, s.client).Err(); err != nil {
			return err
		}
	}
	now := nanos(s.now())
	err := s.scanIndex(ctx, 500, func(ids []string) error {
		if s.split {
			return s.placeAll(ctx, ids)
		}
		return s.enrollEach(ctx, enrollSideScript, s.index, now, ids)
	})
	if err != nil {
		return err
	}
	return indexScript.Run(ctx, s.client, []string{s.idsKey()}, 0, "", s.ttl, "0").Err()
}

// placeAll places the live sessions of ids as their metas say (a split
// store): one pipeline of reads, one of placeScript runs.
func (s *Store) placeAll(ctx context.Context, ids []string) error {
	cmds := make([]*goredis.SliceCmd, len(ids))
	if _, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HMGet(ctx, s.metaKey(id), sideFields...)
		}
		return nil
	}); err != nil {
		return err
	}
	_, err := s.client.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for i, id := range ids {
			if p := readPlaced(id, cmds[i].Val()); p.live {
				s.place(ctx, pipe, p, true)
			}
		}
		return nil
	})
	return err
}
