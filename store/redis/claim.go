package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

var _ driver.Claimer = (*Store)(nil)

// claimBudget is how many entries of the claim set one run of claimScript
// reads before it hands back where it stopped, so that a long walk (many
// claimable sessions the filter leaves out) never blocks the server for
// long: the store runs it again from there.
const claimBudget = 256

// claimScript takes the lease of the first session of the claim set, from
// after on, that is live, has a status of the filter, carries the
// filter's labels and has no live lease, exactly as acquireScript does. It
// removes entries of sessions that are gone, expired or not claimable.
//
//	KEYS: claims
//	ARGV: now, lease_expires, holder, meta key prefix, meta key suffix,
//	      after (a member, "" from the start), after_score, budget,
//	      n_status, status... (n_status of them), label key, value...
//	returns {"OK", id, "token:takeovers"}, {"NONE"}, {"MORE", last member, its score}
//	(budget entries read, none taken) or {"REBUILD"} (no marker)
//
// A session's meta key is the prefix, its ID and the suffix. The walk goes
// on from after's rank, or, if after was removed since, from the first
// entry of its score.
var claimScript = goredis.NewScript(luaHelpers + claimHelpers + leaseGrant + `
local set, now = KEYS[1], ARGV[1]
if not redis.call('ZSCORE', set, '') then return {'REBUILD'} end
local want, labels, nlab = {}, {}, 0
local nst = tonumber(ARGV[9])
for i = 10, 9 + nst do want[ARGV[i]] = true end
for i = 10 + nst, #ARGV - 1, 2 do
  labels[ARGV[i]] = ARGV[i + 1]
  nlab = nlab + 1
end
local function matches(raw)
  if nlab == 0 then return true end
  local ok, got = pcall(cjson.decode, raw or '')
  if not ok or type(got) ~= 'table' then return false end
  for k, v in pairs(labels) do
    if got[k] ~= v then return false end
  end
  return true
end
local start = 1
if ARGV[6] ~= '' then
  local r = redis.call('ZRANK', set, ARGV[6])
  if r then start = r + 1 else start = redis.call('ZCOUNT', set, '-inf', '(' .. ARGV[7]) end
end
local budget = tonumber(ARGV[8])
local last, score = ARGV[6], ARGV[7]
while budget > 0 do
  local batch = redis.call('ZRANGE', set, start, start + 15, 'WITHSCORES')
  if #batch == 0 then return {'NONE'} end
  local dropped = 0
  for i = 1, #batch, 2 do
    local id = batch[i]
    if id ~= '' then
      budget = budget - 1
      local key = ARGV[4] .. id .. ARGV[5]
      local cur = redis.call('HMGET', key, 'expires_at', 'last_seq', 'status', 'labels',
        'lease_holder', 'lease_expires', 'lease_token')
      if not cur[2] or expired(cur[1], now) or not claimable(cur[3]) then
        redis.call('ZREM', set, id)
        dropped = dropped + 1
      elseif want[cur[3]] and not held(cur[5], cur[6], now) and matches(cur[4]) then
        return {'OK', id, grant(key, cur[7], ARGV[2], ARGV[3], cur[5])}
      end
    end
    last, score = id, batch[i + 1]
  end
  start = start + #batch / 2 - dropped
end
return {'MORE', last, score}
`)

// enrollScript adds a session to the claim set if it is live and
// claimable, scored by its created_at: the rebuild of the set.
//
//	KEYS: meta, claims
//	ARGV: now, id, ttl
//	returns 1 (added) or 0
var enrollScript = goredis.NewScript(luaHelpers + claimHelpers + `
local cur = redis.call('HMGET', KEYS[1], 'expires_at', 'last_seq', 'status', 'created_at')
if not cur[2] or expired(cur[1], ARGV[1]) or not claimable(cur[3]) then return 0 end
index(KEYS[2], micros(cur[4]), ARGV[2], ARGV[3], '0')
return 1
`)

// ClaimNext implements driver.Claimer. On a single server, for the
// statuses new, running and interrupted, it is one script over the claim
// set (cairn:<ns>:claimable), oldest first; a namespace without a complete
// claim set has it built from the index first. Other filters, and every
// claim on Redis Cluster or Ring, list the matching sessions and try
// Acquire on each. Only the filter's Status and Labels count. How the
// claim set is kept: docs/STORES.md, "The Redis store", Claims.
func (s *Store) ClaimNext(ctx context.Context, holder string, ttl time.Duration, filter cairn.ListOptions) (_ cairn.Lease, err error) {
	defer unavailable(&err)
	if err := s.guard.Lease("claim", holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	if s.split || !claimSetServes(filter.Status) {
		return s.claimByList(ctx, holder, ttl, filter)
	}
	args := []any{"", "", holder, s.prefix + "{" + s.opts.Namespace + ":", "}:meta", "", "", claimBudget, len(filter.Status)}
	for _, st := range filter.Status {
		args = append(args, string(st))
	}
	for k, v := range filter.Labels {
		args = append(args, k, v)
	}
	for rebuilds := 0; ; {
		if err := ctx.Err(); err != nil {
			return cairn.Lease{}, fmt.Errorf("claim in namespace %s: %w", s.opts.Namespace, err)
		}
		now := s.now()
		exp := now.Add(ttl)
		args[0], args[1] = nanos(now), nanos(exp)
		res, err := retry(ctx, func(ctx context.Context) ([]string, error) {
			return claimScript.Run(ctx, s.client, []string{s.claims}, args...).StringSlice()
		})
		if err != nil {
			return cairn.Lease{}, fmt.Errorf("claim in namespace %s: %w", s.opts.Namespace, err)
		}
		switch {
		case len(res) == 3 && res[0] == replyOK:
			tok, n, err := granted(res[2])
			if err != nil {
				return cairn.Lease{}, fmt.Errorf("claim %s: %w", res[1], err)
			}
			return cairn.Lease{Session: res[1], Holder: holder, Token: tok, Expires: exp, Takeovers: n}, nil
		case len(res) == 1 && res[0] == "NONE":
			return cairn.Lease{}, fmt.Errorf("claim in namespace %s: %w", s.opts.Namespace, cairn.ErrNotFound)
		case len(res) == 3 && res[0] == "MORE":
			args[5], args[6] = res[1], res[2]
		case len(res) == 1 && res[0] == "REBUILD" && rebuilds < 3:
			rebuilds++
			if err := s.rebuildClaims(ctx); err != nil {
				return cairn.Lease{}, fmt.Errorf("claim in namespace %s: rebuild the claim set: %w", s.opts.Namespace, err)
			}
			args[5], args[6] = "", ""
		default:
			return cairn.Lease{}, fmt.Errorf("claim in namespace %s: unexpected script reply %q", s.opts.Namespace, res)
		}
	}
}

// claimSetServes reports whether the claim set holds every session a
// filter on statuses can match: the filter names statuses, and only new,
// running or interrupted.
func claimSetServes(statuses []cairn.Status) bool {
	if len(statuses) == 0 {
		return false
	}
	for _, st := range statuses {
		switch st {
		case cairn.StatusNew, cairn.StatusRunning, cairn.StatusInterrupted:
		default:
			return false
		}
	}
	return true
}

// rebuildClaims fills the claim set from the namespace index (exact on a
// single server): every live session with a claimable status, then the
// marker that says the set is complete. Writes that run meanwhile keep the
// set in step themselves, so a session is never left out. Concurrent
// rebuilds in several processes do the same work twice, harmlessly; within
// a store, one waits for the other.
func (s *Store) rebuildClaims(ctx context.Context) error {
	s.rebuildMu.Lock()
	defer s.rebuildMu.Unlock()
	switch err := s.client.ZScore(ctx, s.claims, "").Err(); {
	case err == nil:
		return nil // built meanwhile
	case !errors.Is(err, goredis.Nil):
		return err
	}
	if err := enrollScript.Load(ctx, s.client).Err(); err != nil {
		return err
	}
	now := nanos(s.now())
	err := s.scanIndex(ctx, 500, func(ids []string) error { return s.enrollEach(ctx, enrollScript, s.claims, now, ids) })
	if err != nil {
		return err
	}
	return indexScript.Run(ctx, s.client, []string{s.claims}, "-inf", "", s.ttl, "0").Err()
}

// claimByList is ClaimNext without the claim set: it lists every session
// that matches the filter's statuses and labels, and tries Acquire on
// each, oldest first, until one succeeds.
func (s *Store) claimByList(ctx context.Context, holder string, ttl time.Duration, filter cairn.ListOptions) (cairn.Lease, error) {
	opts := cairn.ListOptions{Status: filter.Status, Labels: filter.Labels, Limit: 1000}
	var infos []cairn.SessionInfo
	for {
		page, err := s.List(ctx, opts)
		if err != nil {
			return cairn.Lease{}, fmt.Errorf("claim in namespace %s: %w", s.opts.Namespace, err)
		}
		infos = append(infos, page.Sessions...)
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	slices.SortFunc(infos, func(a, b cairn.SessionInfo) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	for _, info := range infos {
		lease, err := s.Acquire(ctx, info.ID, holder, ttl)
		switch {
		case err == nil:
			return lease, nil
		case !errors.Is(err, cairn.ErrLeaseHeld) && !errors.Is(err, cairn.ErrNotFound):
			return cairn.Lease{}, fmt.Errorf("claim in namespace %s: %w", s.opts.Namespace, err)
		}
	}
	return cairn.Lease{}, fmt.Errorf("claim in namespace %s: %w", s.opts.Namespace, cairn.ErrNotFound)
}
