package redis

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// luaHelpers is prepended to every script that needs it.
//
// The Lua scripts of this file run atomically inside Redis. Each takes the
// keys of one session (meta hash, events list) and, when the store is not
// split, the namespace index and the claim set as third and fourth keys; a
// split store (Cluster, Ring) passes two keys, updates the index itself
// with indexScript and keeps no claim set (see claim.go).
//
// Times reach the scripts as decimal strings of Unix nanoseconds from the
// store's clock, never Redis's own. Lua numbers are doubles, which cannot
// hold nanoseconds exactly, so expiry is compared on the strings
// (expired).
const luaHelpers = `
-- expired reports whether a session whose expires_at is exp has expired
-- at now; both are non-negative decimal strings, "0" or false: never.
local function expired(exp, now)
  if not exp or exp == '' or exp == '0' then return false end
  if #now ~= #exp then return #now > #exp end
  return now >= exp
end

-- terms returns the key of the session's postings (searchindex.go), the
-- meta's (KEYS[1], "...:meta") neighbour in the session's slot.
local function terms()
  return string.sub(KEYS[1], 1, -5) .. 'terms'
end

-- touch gives the session's keys (meta, events, postings) a relative TTL,
-- or none when ttl is "0". was is the session's expires_at before the
-- write, false when its keys were just made: keys get a TTL only in a
-- script that also sets expires_at to a time, so when it was never ("0",
-- "" or false) and ttl is "0", they have none to take away.
local function touch(ttl, was)
  if ttl == '0' and (not was or was == '' or was == '0') then return end
  for _, k in ipairs({KEYS[1], KEYS[2], terms()}) do
    if ttl ~= '0' then
      redis.call('EXPIRE', k, ttl)
    else
      redis.call('PERSIST', k)
    end
  end
end

-- index records the session's updated time in the namespace index and
-- keeps the index alive at least as long as the session. With gt "1" it
-- only ever raises a score, for index updates that may arrive out of order.
local function index(idx, score, id, ttl, gt)
  local existed = ttl ~= '0' and redis.call('EXISTS', idx) == 1
  if gt == '1' then
    redis.call('ZADD', idx, 'GT', score, id)
  else
    redis.call('ZADD', idx, score, id)
  end
  if ttl == '0' then
    redis.call('PERSIST', idx)
  elseif existed then
    redis.call('EXPIRE', idx, ttl, 'GT')
  else
    redis.call('EXPIRE', idx, ttl)
  end
end
`

// advanceHelpers is prepended to the append scripts, after luaHelpers and
// claimHelpers.
const advanceHelpers = `
-- advance applies an append to the session's meta with one HSET: its last
-- seq, updated time and expiry, and as the events' summary says, its
-- steps, status and first message; then its keys' TTL, and the claim set
-- when the status changes (reclaim). exp, status, steps and first are the
-- meta's fields before the append (false: missing). ARGV is laid out as
-- appendScript's.
local function advance(exp, status, steps, first)
  local f = {'last_seq', ARGV[5], 'updated_at', ARGV[10], 'expires_at', ARGV[2]}
  if ARGV[6] ~= '0' then
    f[#f + 1] = 'steps'
    f[#f + 1] = string.format('%d', (tonumber(steps) or 0) + tonumber(ARGV[6]))
  end
  if ARGV[7] ~= '' and ARGV[7] ~= status then
    f[#f + 1] = 'status'
    f[#f + 1] = ARGV[7]
  end
  if ARGV[8] == '1' and (not first or first == '') then
    f[#f + 1] = 'first_message'
    f[#f + 1] = ARGV[9]
  end
  redis.call('HSET', KEYS[1], unpack(f))
  touch(ARGV[3], exp)
  if KEYS[4] and ARGV[7] ~= '' and ARGV[7] ~= status then reclaim(status, ARGV[7], ARGV[11], ARGV[3]) end
end
`

// retryHelpers is prepended to the append scripts.
const retryHelpers = `
-- unheld returns "DAMAGED n" when the events list holds n events where
-- the session's last seq is last, false when it holds last. The store
-- pushes events and moves last_seq in one script, so a list of another
-- length lost elements, or gained some, by other hands (or by eviction):
-- an append there would put its events at the wrong positions, over a
-- gap. LLEN costs the same whatever the list's length.
local function unheld(last)
  local n = redis.call('LLEN', KEYS[2])
  if n ~= tonumber(last) then return 'DAMAGED ' .. n end
  return false
end

-- retried reports whether the session holds exactly the events
-- ARGV[first], ARGV[first + 1], … at the seqs after expect, whether or
-- not others follow them: the session's last seq cur_last is at least
-- last, and the envelopes stored at those seqs are byte for byte the ones
-- given (the whole envelope: v, seq, at, kind, run, data). That is an
-- append sent again after its reply was lost (by go-redis after a network
-- error, or by the caller): it is already done.
local function retried(cur_last, expect, last, first)
  if tonumber(expect) < 0 or tonumber(cur_last) < tonumber(last) then return false end
  local held = redis.call('LRANGE', KEYS[2], tonumber(expect), tonumber(last) - 1)
  if #held ~= #ARGV - first + 1 then return false end
  for i = 1, #held do
    if held[i] ~= ARGV[first + i - 1] then return false end
  end
  return true
end
`

// claimHelpers is prepended to the scripts that keep the claim set (KEYS[4]
// when the store is not split) in step with a session's status.
const claimHelpers = `
-- claimable reports whether a session of status st may be claimed: it is
-- new, running or interrupted.
local function claimable(st)
  return st == 'new' or st == 'running' or st == 'interrupted'
end

-- micros turns an RFC 3339 UTC time as formatTime writes it into Unix
-- microseconds, rounded down, as a decimal string: a session's score in
-- the claim set. A time it cannot read scores "0", so that the session is
-- claimed early rather than never.
local function micros(t)
  local y, mo, d, h, mi, s, f = string.match(t or '', '^(%d+)-(%d%d)-(%d%d)T(%d%d):(%d%d):(%d%d)%.?(%d*)Z$')
  if not y then return '0' end
  y, mo = tonumber(y), tonumber(mo)
  if mo <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((mo + 9) % 12) + 2) / 5) + tonumber(d) - 1
  local days = era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
  local secs = ((days * 24 + tonumber(h)) * 60 + tonumber(mi)) * 60 + tonumber(s)
  return string.format('%.0f', secs * 1000000 + tonumber(string.sub(f .. '000000', 1, 6)))
end

-- reclaim follows a change of the session's status from old to new in the
-- claim set: it adds the session (scored by its creation time) when it
-- becomes claimable and removes it when it stops being so. Changes between
-- two claimable statuses (new to running, running to interrupted) touch
-- nothing.
local function reclaim(old, new, id, ttl)
  local was, is = claimable(old), claimable(new)
  if was == is then return end
  if is then
    index(KEYS[4], micros(redis.call('HGET', KEYS[1], 'created_at')), id, ttl, '0')
  else
    redis.call('ZREM', KEYS[4], id)
  end
end
`

// createScript makes a session unless a live one holds the ID, and adds it
// to the claim set, scored by its creation time (a new session is
// claimable). The first session of a namespace (no index yet) also marks
// the claim set and the text index complete: there is no other session
// they could miss. What an expired session of the ID left is cleared, its
// postings and (unless the store is split) its entries in the text index
// too.
//
//	KEYS: meta, events[, index, claims]
//	ARGV: now, expires_at, ttl, id, score, created_at, updated_at, labels,
//	      created_score, nonce
//	returns "OK" or "EXISTS"
var createScript = goredis.NewScript(luaHelpers + sideHelpers + searchHelpers + callHelpers + `
if redis.call('EXISTS', KEYS[1]) == 1 then
  local exp = redis.call('HGET', KEYS[1], 'expires_at')
  if not expired(exp, ARGV[1]) then return 'EXISTS' end
end
local old = redis.call('HMGET', KEYS[1], 'status', 'labels')
redis.call('DEL', KEYS[1], KEYS[2], terms())
redis.call('HSET', KEYS[1],
  'created_at', ARGV[6], 'updated_at', ARGV[7], 'expires_at', ARGV[2],
  'status', 'new', 'steps', 0, 'first_message', '', 'labels', ARGV[8],
  'last_seq', 0)
note(ARGV[10], 'OK')
touch(ARGV[3])
if KEYS[3] then
  local p = sidepfx(KEYS[3])
  if old[2] then unplace(p, ARGV[4], old[1], old[2]) end
  local pairs, st = searchkeys(p)
  unsearch(pairs, st, ARGV[4])
  if redis.call('EXISTS', KEYS[3]) == 0 then
    index(p .. 'ids', 0, '', ARGV[3], '0')
    ready(st, ARGV[3])
  end
  place(p, ARGV[4], 'new', ARGV[8], ARGV[5], ARGV[2], ARGV[3])
end
if KEYS[4] then
  if redis.call('EXISTS', KEYS[3]) == 0 then index(KEYS[4], '-inf', '', ARGV[3], '0') end
  index(KEYS[4], ARGV[9], ARGV[4], ARGV[3], '0')
end
if KEYS[3] then index(KEYS[3], ARGV[5], ARGV[4], ARGV[3], '0') end
return 'OK'
`)

// appendArgs is the number of ARGV entries of appendScript before the
// events.
const appendArgs = 16

// appendScript appends events if the session is live and its last seq is
// the expected one, and applies the events' summary to the meta. Only an
// append that changes the status between claimable and not touches the
// claim set.
//
//	KEYS: meta, events[, index, claims]
//	ARGV: now, expires_at, ttl, expect_seq, new_last_seq, steps_delta,
//	      status ("" unchanged), has_message ("1"/"0"), first_message,
//	      updated_at, id, score, postings, hashes, documents, tokens
//	      (see searched), event...
//	returns "OK", "DONE", "NOTFOUND", "CONFLICT" or "DAMAGED n"
//
// At a stale expected seq, an append whose events the session holds
// exactly at their seqs (retried), followed by others or not, writes
// nothing and returns "DONE". A session whose events list does not hold
// as many events as its last seq says (see unheld) is not appended to.
// The events' postings go into the text index with them.
var appendScript = goredis.NewScript(luaHelpers + sideHelpers + searchHelpers + claimHelpers + advanceHelpers + retryHelpers + `
local cur = redis.call('HMGET', KEYS[1], 'expires_at', 'last_seq', 'status', 'labels', 'first_message', 'steps')
if not cur[2] or expired(cur[1], ARGV[1]) then return 'NOTFOUND' end
if tonumber(cur[2]) ~= tonumber(ARGV[4]) then
  if retried(cur[2], ARGV[4], ARGV[5], 17) then return 'DONE' end
  return 'CONFLICT'
end
local bad = unheld(cur[2])
if bad then return bad end
for i = 17, #ARGV, 500 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 499, #ARGV)))
end
searched(13, ARGV[11], ARGV[3])
advance(cur[1], cur[3], cur[6], cur[5])
if KEYS[3] then
  index(KEYS[3], ARGV[12], ARGV[11], ARGV[3], '0')
  reside(cur[3], ARGV[7], ARGV[11], ARGV[12], ARGV[2], ARGV[3], cur[4] or false)
end
return 'OK'
`)

// removeScript deletes a session's keys, its index entry, its claim set
// entry and (unless the store is split) its entries in the text index.
// With only_expired "1" it leaves a live session alone (Sweep, List's
// pruning).
//
//	KEYS: meta, events[, index, claims]
//	ARGV: now, id, only_expired
//	returns "DELETED" (it was live), "EXPIRED" (deleted, it had expired),
//	"MISSING" (no such session) or "LIVE" (kept, only_expired)
var removeScript = goredis.NewScript(luaHelpers + sideHelpers + searchHelpers + `
local function unindex(status, labels)
  for i = 3, #KEYS do redis.call('ZREM', KEYS[i], ARGV[2]) end
  if KEYS[3] then
    local p = sidepfx(KEYS[3])
    unplace(p, ARGV[2], status, labels)
    local pairs, st = searchkeys(p)
    unsearch(pairs, st, ARGV[2])
  end
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[2], terms())
  unindex(false, false)
  return 'MISSING'
end
local cur = redis.call('HMGET', KEYS[1], 'expires_at', 'status', 'labels')
local gone = expired(cur[1], ARGV[1])
if ARGV[3] == '1' and not gone then
  if KEYS[3] then
    local e = expscore(cur[1])
    if e then redis.call('ZADD', sidepfx(KEYS[3]) .. 'expiry', e, ARGV[2]) end
  end
  return 'LIVE'
end
redis.call('DEL', KEYS[1], KEYS[2], terms())
unindex(cur[2], cur[3])
if gone then return 'EXPIRED' end
return 'DELETED'
`)

// probeScript looks for the evidence that a call whose reply was lost was
// applied (see change): the answer the script noted for its nonce (see
// callHelpers), or, for an append, its events at their seqs.
//
//	KEYS: meta, events
//	ARGV: nonce, expect_seq, new_last_seq, event...
//	returns the noted answer, "DONE" or "UNKNOWN"
var probeScript = goredis.NewScript(retryHelpers + callHelpers + `
local done = seen(ARGV[1])
if done then return done end
if #ARGV > 3 then
  local cur = redis.call('HGET', KEYS[1], 'last_seq')
  if cur and retried(cur, ARGV[2], ARGV[3], 4) then return 'DONE' end
end
return 'UNKNOWN'
`)

// replyUnknown is probeScript's answer when it finds no evidence.
const replyUnknown = "UNKNOWN"

// probe runs probeScript for a call on session id whose nonce is n (""
// for none) and, for an append at expectSeq, whose encoded events are
// events. found is false when no evidence was found.
func (s *Store) probe(ctx context.Context, id, n string, expectSeq int64, events []any) (res string, found bool, err error) {
	args := append([]any{n, expectSeq, expectSeq + int64(len(events))}, events...)
	res, err = probeScript.Run(ctx, s.client, []string{s.metaKey(id), s.eventsKey(id)}, args...).Text()
	return res, err == nil && res != replyUnknown, err
}

// indexScript is the index update of a split store, run after a
// successful Create or Append (gt "1": scores only rise, since updates of
// one session may arrive out of order), or by List to set a score that
// disagrees with the session's meta (gt "0").
//
//	KEYS: index
//	ARGV: score, id, ttl, gt
var indexScript = goredis.NewScript(luaHelpers + `
index(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
return 'OK'
`)

// Script replies.
const (
	replyOK       = "OK"
	replyDone     = "DONE" // a retried append: nothing written
	replyExists   = "EXISTS"
	replyNotFound = "NOTFOUND"
	replyConflict = "CONFLICT"
	replyDeleted  = "DELETED"
	replyExpired  = "EXPIRED"
	replyMissing  = "MISSING"
	replyLive     = "LIVE"
)
