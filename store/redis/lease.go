package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

var _ cairn.Leaser = (*Store)(nil)

// callHelpers is prepended to the scripts that note their calls.
const callHelpers = `
-- seen returns what the call with nonce n answered when it was applied,
-- or nil when it was not.
local function seen(n)
  local c = redis.call('HGET', KEYS[1], 'calls')
  if not c then return nil end
  for w in string.gmatch(c, '%S+') do
    local k, v = string.match(w, '^([^:]+):(.*)$')
    if k == n then return v end
  end
  return nil
end

-- note records that the call with nonce n was applied and answered v,
-- keeping the last eight calls.
local function note(n, v)
  local list = {}
  for w in string.gmatch(redis.call('HGET', KEYS[1], 'calls') or '', '%S+') do list[#list + 1] = w end
  list[#list + 1] = n .. ':' .. v
  while #list > 8 do table.remove(list, 1) end
  redis.call('HSET', KEYS[1], 'calls', table.concat(list, ' '))
end
`

// leaseFence is the lease check shared by the scripts: it returns an
// error reply, or nil and the meta's expires_at, last_seq, lease_holder,
// lease_token, status, labels, first_message and steps when the session
// is live and ARGV[tok] is its token.
const leaseFence = `
local function fence(now, tok)
  local cur = redis.call('HMGET', KEYS[1], 'expires_at', 'last_seq', 'lease_holder', 'lease_token', 'status',
    'labels', 'first_message', 'steps')
  if not cur[2] or expired(cur[1], now) then return 'NOTFOUND' end
  if not cur[3] or cur[3] == '' or cur[4] ~= tok then return 'LOST' end
  return nil, cur
end
`

// leaseGrant is the lease grant shared by acquireScript and claimScript.
const leaseGrant = `
-- held reports whether a lease of holder h expiring at exp is live at now.
local function held(h, exp, now)
  return h and h ~= '' and not expired(exp, now)
end

-- grant gives the lease of the session whose meta hash is key to holder
-- until lease_expires, and returns "token:takeovers": the new token, the
-- larger of prev (the session's last token, false for none) plus one and
-- the server's TIME in microseconds, and lease_takeovers, counted up when
-- old (the lease_holder it replaces) had not released the lease.
local function grant(key, prev, lease_expires, holder, old)
  local t = redis.call('TIME')
  local tok = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local p = tonumber(prev or '0') or 0
  if tok <= p then tok = p + 1 end
  local ts = string.format('%.0f', tok)
  redis.call('HSET', key, 'lease_holder', holder, 'lease_token', ts, 'lease_expires', lease_expires)
  local n
  if old and old ~= '' then
    n = redis.call('HINCRBY', key, 'lease_takeovers', 1)
  else
    n = tonumber(redis.call('HGET', key, 'lease_takeovers') or '0') or 0
  end
  return ts .. ':' .. string.format('%d', n)
end
`

// acquireScript takes the lease unless a live one is set (force "1": even
// then).
//
//	KEYS: meta
//	ARGV: now, lease_expires, holder, force, nonce
//	returns {"OK", "token:takeovers"}, {"HELD", holder, lease_expires} or
//	{"NOTFOUND"}
var acquireScript = goredis.NewScript(luaHelpers + leaseGrant + callHelpers + `
local cur = redis.call('HMGET', KEYS[1], 'expires_at', 'last_seq', 'lease_holder', 'lease_expires', 'lease_token')
if not cur[2] or expired(cur[1], ARGV[1]) then return {'NOTFOUND'} end
local done = seen(ARGV[5])
if done then return {'OK', done} end
if ARGV[4] ~= '1' and held(cur[3], cur[4], ARGV[1]) then
  return {'HELD', cur[3], cur[4]}
end
local got = grant(KEYS[1], cur[5], ARGV[2], ARGV[3], cur[3])
note(ARGV[5], got)
return {'OK', got}
`)

// renewScript moves the lease's expiry if the token is still the session's.
//
//	KEYS: meta
//	ARGV: now, lease_expires, token, nonce
//	returns "OK:takeovers", "LOST" or "NOTFOUND"
var renewScript = goredis.NewScript(luaHelpers + leaseFence + callHelpers + `
local bad = fence(ARGV[1], ARGV[3])
if bad == 'LOST' then
  local done = seen(ARGV[4])
  if done then return done end
end
if bad then return bad end
redis.call('HSET', KEYS[1], 'lease_expires', ARGV[2])
local got = 'OK:' .. (redis.call('HGET', KEYS[1], 'lease_takeovers') or '0')
note(ARGV[4], got)
return got
`)

// releaseScript clears the lease if the token is still the session's.
//
//	KEYS: meta
//	ARGV: now, token, nonce
//	returns "OK", "LOST" or "NOTFOUND"
var releaseScript = goredis.NewScript(luaHelpers + leaseFence + callHelpers + `
local bad = fence(ARGV[1], ARGV[2])
if bad == 'LOST' and seen(ARGV[3]) then return 'OK' end
if bad then return bad end
redis.call('HSET', KEYS[1], 'lease_holder', '', 'lease_expires', '0')
note(ARGV[3], 'OK')
return 'OK'
`)

// fencedAppendArgs is the number of ARGV entries of fencedAppendScript
// before the events.
const fencedAppendArgs = appendArgs + 2

// fencedAppendScript is appendScript with the lease checked first, in the
// same script. A try of a call that was applied before (its nonce noted:
// go-redis sent it again after a lost reply) is done, even when the lease
// has been taken over since.
//
//	KEYS: meta, events[, index, claims]
//	ARGV: appendScript's first twelve, token, nonce, its four of the text
//	      index, event...
//	returns "OK", "DONE", "NOTFOUND", "LOST", "CONFLICT" or "DAMAGED n"
var fencedAppendScript = goredis.NewScript(luaHelpers + sideHelpers + searchHelpers + claimHelpers + advanceHelpers + retryHelpers + leaseFence + callHelpers + `
local bad, cur = fence(ARGV[1], ARGV[13])
if bad == 'LOST' and seen(ARGV[14]) then return 'DONE' end
if bad then return bad end
if tonumber(cur[2]) ~= tonumber(ARGV[4]) then
  if retried(cur[2], ARGV[4], ARGV[5], 19) then return 'DONE' end
  return 'CONFLICT'
end
local damaged = unheld(cur[2])
if damaged then return damaged end
note(ARGV[14], 'OK')
for i = 19, #ARGV, 500 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 499, #ARGV)))
end
searched(15, ARGV[11], ARGV[3])
advance(cur[1], cur[5], cur[8], cur[7])
if KEYS[3] then
  index(KEYS[3], ARGV[12], ARGV[11], ARGV[3], '0')
  reside(cur[5], ARGV[7], ARGV[11], ARGV[12], ARGV[2], ARGV[3], cur[6] or false)
end
return 'OK'
`)

const replyLost = "LOST"

// Acquire implements cairn.Leaser. The lease is three fields of the
// session's meta hash, changed by one script per call; its token is the
// larger of the last one plus one and the server's TIME in microseconds.
// A call whose reply is lost is answered from the nonce its script noted
// (docs/STORES.md, "The Redis store", Leases).
func (s *Store) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (_ cairn.Lease, err error) {
	defer unavailable(&err)
	return s.acquire(ctx, id, holder, ttl, false)
}

// Takeover implements cairn.Leaser.
func (s *Store) Takeover(ctx context.Context, id, holder string, ttl time.Duration) (_ cairn.Lease, err error) {
	defer unavailable(&err)
	return s.acquire(ctx, id, holder, ttl, true)
}

func (s *Store) acquire(ctx context.Context, id, holder string, ttl time.Duration, force bool) (cairn.Lease, error) {
	if err := s.guard.Lease(id, holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	now := s.now()
	exp := now.Add(ttl)
	f := "0"
	if force {
		f = "1"
	}
	n := nonce()
	res, err := change(ctx, func(ctx context.Context) ([]string, error) {
		return acquireScript.Run(ctx, s.client, []string{s.metaKey(id)}, nanos(now), nanos(exp), holder, f, n).StringSlice()
	}, func(ctx context.Context) ([]string, bool, error) {
		tok, found, err := s.probe(ctx, id, n, 0, nil)
		return []string{replyOK, tok}, found, err
	})
	if err != nil || len(res) == 0 {
		return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, err)
	}
	switch {
	case res[0] == replyOK && len(res) == 2:
		tok, n, err := granted(res[1])
		if err != nil {
			return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, err)
		}
		return cairn.Lease{Session: id, Holder: holder, Token: tok, Expires: exp, Takeovers: n}, nil
	case res[0] == "HELD" && len(res) == 3:
		return cairn.Lease{}, &cairn.LeaseHeldError{Session: id, Holder: res[1], Expires: fromNanos(res[2])}
	case res[0] == replyNotFound:
		return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, cairn.ErrNotFound)
	}
	return cairn.Lease{}, fmt.Errorf("acquire %s: unexpected script reply %q", id, res)
}

// granted parses a grant's answer, "token:takeovers".
func granted(s string) (tok, takeovers int64, err error) {
	t, n, _ := strings.Cut(s, ":")
	if tok, err = strconv.ParseInt(t, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("token %q: %w", s, err)
	}
	if takeovers, err = strconv.ParseInt(n, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("takeovers %q: %w", s, err)
	}
	return tok, takeovers, nil
}

// fromNanos parses the scripts' Unix nanoseconds.
func fromNanos(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// leaseReply turns a lease script's reply into an error for op.
func leaseReply(op, id, res string, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("%s %s: %w", op, id, err)
	case res == replyOK:
		return nil
	case res == replyLost:
		return fmt.Errorf("%s %s: %w", op, id, cairn.ErrLeaseLost)
	case res == replyNotFound:
		return fmt.Errorf("%s %s: %w", op, id, cairn.ErrNotFound)
	}
	return fmt.Errorf("%s %s: unexpected script reply %q", op, id, res)
}

// Renew implements cairn.Leaser.
func (s *Store) Renew(ctx context.Context, lease cairn.Lease, ttl time.Duration) (_ cairn.Lease, err error) {
	defer unavailable(&err)
	if err := s.guard.Lease(lease.Session, lease.Holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	now := s.now()
	exp := now.Add(ttl)
	n := nonce()
	res, err := change(ctx, func(ctx context.Context) (string, error) {
		return renewScript.Run(ctx, s.client, []string{s.metaKey(lease.Session)}, nanos(now), nanos(exp), token(lease.Token), n).Text()
	}, func(ctx context.Context) (string, bool, error) {
		return s.probe(ctx, lease.Session, n, 0, nil)
	})
	res, takeovers, _ := strings.Cut(res, ":")
	if err := leaseReply("renew", lease.Session, res, err); err != nil {
		return cairn.Lease{}, err
	}
	if lease.Takeovers, err = strconv.ParseInt(takeovers, 10, 64); err != nil {
		return cairn.Lease{}, fmt.Errorf("renew %s: takeovers %q: %w", lease.Session, takeovers, err)
	}
	lease.Expires = exp
	return lease, nil
}

func token(t int64) string { return strconv.FormatInt(t, 10) }

// nonce returns a random identity for one call of a script that notes its
// calls (see callHelpers).
func nonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Release implements cairn.Leaser.
func (s *Store) Release(ctx context.Context, lease cairn.Lease) (err error) {
	defer unavailable(&err)
	if err := s.guard.Session(lease.Session); err != nil {
		return err
	}
	n := nonce()
	res, err := change(ctx, func(ctx context.Context) (string, error) {
		return releaseScript.Run(ctx, s.client, []string{s.metaKey(lease.Session)}, nanos(s.now()), token(lease.Token), n).Text()
	}, func(ctx context.Context) (string, bool, error) {
		return s.probe(ctx, lease.Session, n, 0, nil)
	})
	return leaseReply("release", lease.Session, res, err)
}

// leaseFields are the meta fields a lease is read from, in the order
// readLease expects them.
var leaseFields = []string{"expires_at", "last_seq", "lease_holder", "lease_token", "lease_expires", "lease_takeovers"}

// CurrentLease implements cairn.Leaser.
func (s *Store) CurrentLease(ctx context.Context, id string) (_ cairn.Lease, err error) {
	defer unavailable(&err)
	if err := s.guard.Session(id); err != nil {
		return cairn.Lease{}, err
	}
	vals, err := retry(ctx, func(ctx context.Context) ([]any, error) {
		return s.client.HMGet(ctx, s.metaKey(id), leaseFields...).Result()
	})
	if err != nil {
		return cairn.Lease{}, fmt.Errorf("lease of %s: %w", id, err)
	}
	lease, live, err := readLease(id, vals, s.now())
	if err != nil {
		return cairn.Lease{}, fmt.Errorf("lease of %s: %w", id, err)
	}
	if !live {
		return cairn.Lease{}, fmt.Errorf("lease of %s: %w", id, cairn.ErrNotFound)
	}
	return lease, nil
}

// CurrentLeases implements cairn.Leaser: one pipeline of HMGETs, one per
// session (on Redis Cluster, one per node the sessions live on, sent at
// once).
func (s *Store) CurrentLeases(ctx context.Context, ids []string) (_ map[string]cairn.Lease, err error) {
	defer unavailable(&err)
	for _, id := range ids {
		if err := s.guard.Session(id); err != nil {
			return nil, err
		}
	}
	out := make(map[string]cairn.Lease, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cmds := make([]*goredis.SliceCmd, len(ids))
	_, err = retry(ctx, func(ctx context.Context) ([]goredis.Cmder, error) {
		return s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, id := range ids {
				cmds[i] = p.HMGet(ctx, s.metaKey(id), leaseFields...)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("leases of %d sessions: %w", len(ids), err)
	}
	now := s.now()
	for i, id := range ids {
		lease, live, err := readLease(id, cmds[i].Val(), now)
		if err != nil {
			return nil, fmt.Errorf("lease of %s: %w", id, err)
		}
		if live && lease.Holder != "" {
			out[id] = lease
		}
	}
	return out, nil
}

// readLease decodes the reply of HMGET meta leaseFields for session id at
// now. live is false when the session does not exist or has expired; a
// free lease has no holder, only the session's takeovers.
func readLease(id string, vals []any, now time.Time) (lease cairn.Lease, live bool, err error) {
	str := func(i int) string { v, _ := vals[i].(string); return v }
	if len(vals) != len(leaseFields) || vals[1] == nil || driver.Expired(fromNanos(str(0)), now) {
		return cairn.Lease{}, false, nil
	}
	var n int64
	if str(5) != "" {
		if n, err = strconv.ParseInt(str(5), 10, 64); err != nil {
			return cairn.Lease{}, false, fmt.Errorf("takeovers %q: %w", str(5), err)
		}
	}
	exp := fromNanos(str(4))
	if str(2) == "" || exp.IsZero() || !now.Before(exp) {
		return cairn.Lease{Session: id, Takeovers: n}, true, nil
	}
	tok, err := strconv.ParseInt(str(3), 10, 64)
	if err != nil {
		return cairn.Lease{}, false, fmt.Errorf("token %q: %w", str(3), err)
	}
	return cairn.Lease{Session: id, Holder: str(2), Token: tok, Expires: exp, Takeovers: n}, true, nil
}

// AppendFenced implements cairn.Leaser: one script checks the lease, then
// does what Append's script does (a split store's steps before and after
// too).
func (s *Store) AppendFenced(ctx context.Context, id string, lease cairn.Lease, expectSeq int64, events ...cairn.Event) (err error) {
	defer unavailable(&err)
	events, err = s.guard.Append(s.opts.Limits, id, expectSeq, events)
	if err != nil {
		return err
	}
	tok := token(lease.Token)
	if lease.Session != id {
		tok = "-1"
	}
	n := nonce()
	ix := indexEvents(events)
	args := s.appendHead(make([]any, 0, fencedAppendArgs+len(events)), id, expectSeq, events)
	args = append(args, tok, n)
	args = append(args, ix.args()...)
	evs, err := encodeEvents(events)
	if err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	args = append(args, evs...)
	if s.split {
		if err := s.hint(ctx, id, ix); err != nil {
			return fmt.Errorf("append %s: text index: %w", id, err)
		}
	}
	res, err := change(ctx, func(ctx context.Context) (string, error) {
		return s.runAppend(ctx, id, fencedAppendScript, args) // with min_replicas, WAIT too (replicas.go)
	}, func(ctx context.Context) (string, bool, error) {
		res, found, err := s.probe(ctx, id, n, expectSeq, evs)
		if found {
			res, err = replyOK, s.replicated(ctx, id) // the first try's: it wrote, the index follows
		}
		return res, found, err
	})
	switch {
	case err == nil && res == replyConflict:
		return fmt.Errorf("append %s at seq %d: %w", id, expectSeq, cairn.ErrConflict)
	case err == nil && res == replyDone:
		return nil // a retry: nothing written, nothing to index
	case err == nil && strings.HasPrefix(res, replyDamaged):
		return fmt.Errorf("append %s: %w", id, s.unheld(id, expectSeq, res))
	}
	if err := leaseReply("append", id, res, err); err != nil {
		return err
	}
	return s.appended(ctx, id, ix)
}
