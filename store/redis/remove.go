package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Delete implements cairn.Store. One script deletes every key of the
// session, its postings among them, and (unless the store is split) its
// entries in the namespace index, the claim set, the side indexes and the
// text index; a split store reads the session's status and labels first
// and removes its index entries right after. An Append that arrives later
// finds no meta and gets cairn.ErrNotFound, so it cannot bring the
// session back.
func (s *Store) Delete(ctx context.Context, id string) (err error) {
	defer unavailable(&err)
	if err := s.guard.Session(id); err != nil {
		return err
	}
	var before placed
	if s.split {
		vals, err := retry(ctx, func(ctx context.Context) ([]any, error) {
			return s.client.HMGet(ctx, s.metaKey(id), sideFields...).Result()
		})
		if err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
		before = readPlaced(id, vals)
	}
	now := nanos(s.now())
	res, err := change(ctx, func(ctx context.Context) (string, error) {
		return removeScript.Run(ctx, s.client, s.scriptKeys(id), now, id, "0").Text()
	}, func(context.Context) (string, bool, error) {
		return "", false, nil // a deletion leaves no sign of whose it was
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if s.split {
		if err := unplaceScript.Run(ctx, s.client, s.unplaceKeys(before.status, before.labels, ""), id).Err(); err != nil {
			return fmt.Errorf("delete %s: index: %w", id, err)
		}
		if err := s.unsearch(ctx, id); err != nil {
			return fmt.Errorf("delete %s: text index: %w", id, err)
		}
	}
	switch res {
	case replyDeleted:
		return nil
	case replyMissing, replyExpired:
		return fmt.Errorf("delete %s: %w", id, cairn.ErrNotFound)
	default:
		return fmt.Errorf("delete %s: unexpected script reply %q", id, res)
	}
}

// sweepBatch is how many expired sessions Sweep removes per pipeline: each
// is one short script, so writers wait for one session's removal at most.
const sweepBatch = 100

// Sweep implements driver.Sweeper: it walks the expiry set from the
// earliest expiry up to now, sweepBatch sessions at a time, and deletes
// each session that has expired on the store's clock, with its index
// entries (one short script per session, the batch in one pipeline), and
// the entries of sessions already gone. Its cost follows the number of
// expired sessions, not the size of the namespace. It returns the number
// of expired sessions it deleted. Redis deletes expired keys by itself too
// (every key carries the TTL); Sweep makes it happen now, and cleans the
// indexes.
func (s *Store) Sweep(ctx context.Context) (_ int, err error) {
	defer unavailable(&err)
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	if err := s.sideReady(ctx); err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	now := s.now()
	n := 0
	for {
		ids, err := s.dueBatch(ctx, now, sweepBatch)
		if err != nil {
			return n, fmt.Errorf("sweep: %w", err)
		}
		if len(ids) == 0 {
			return n, nil
		}
		k, err := s.remove(ctx, ids, s.expiryKey())
		n += k
		if err != nil {
			return n, fmt.Errorf("sweep: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("sweep: %w", err)
		}
	}
}

// dueBatch returns up to n entries of the expiry set whose expiry is
// before now's microsecond: sessions that have expired, unless an append
// refreshed them since (remove then scores them again, past now).
func (s *Store) dueBatch(ctx context.Context, now time.Time, n int64) ([]string, error) {
	return retry(ctx, func(ctx context.Context) ([]string, error) {
		return s.client.ZRangeByScore(ctx, s.expiryKey(), &goredis.ZRangeBy{
			Min: "-inf", Max: "(" + strconv.FormatInt(now.UnixMicro(), 10), Count: n,
		}).Result()
	})
}

// CountExpired counts the sessions that Sweep would delete now: those of
// the expiry set whose meta exists and has expired on the store's clock.
// It reads the expired part of the expiry set and those sessions' metas,
// nothing else, and deletes nothing (on a namespace written by an earlier
// version of the store it builds the side indexes first, as Sweep and
// List do).
func (s *Store) CountExpired(ctx context.Context) (_ int, err error) {
	defer unavailable(&err)
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	if err := s.sideReady(ctx); err != nil {
		return 0, fmt.Errorf("count expired: %w", err)
	}
	now := s.now()
	max := "(" + strconv.FormatInt(now.UnixMicro(), 10)
	n := 0
	for offset := int64(0); ; {
		ids, err := retry(ctx, func(ctx context.Context) ([]string, error) {
			return s.client.ZRangeByScore(ctx, s.expiryKey(), &goredis.ZRangeBy{Min: "-inf", Max: max, Offset: offset, Count: 1000}).Result()
		})
		if err != nil {
			return n, fmt.Errorf("count expired: %w", err)
		}
		if len(ids) == 0 {
			return n, nil
		}
		offset += int64(len(ids))
		cmds := make([]*goredis.SliceCmd, len(ids))
		_, err = retry(ctx, func(ctx context.Context) ([]goredis.Cmder, error) {
			return s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for i, id := range ids {
					cmds[i] = p.HMGet(ctx, s.metaKey(id), "expires_at", "last_seq")
				}
				return nil
			})
		})
		if err != nil {
			return n, fmt.Errorf("count expired: %w", err)
		}
		for _, c := range cmds {
			v := c.Val()
			if exp, _ := v[0].(string); v[1] != nil && driver.Expired(fromNanos(exp), now) {
				n++
			}
		}
	}
}

// remove deletes the sessions of ids that have expired, and the index
// entries of those that are gone (in extra too, a side index the caller
// walked, "" for none), in one pipeline of removeScript calls (a live
// session, refreshed in the meantime, is left alone, and its expiry entry
// set right). A split store reads the sessions' status and labels first
// and removes the index entries after. It returns how many expired
// sessions it deleted.
func (s *Store) remove(ctx context.Context, ids []string, extra string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var before []*goredis.SliceCmd
	if s.split {
		before = make([]*goredis.SliceCmd, len(ids))
		if _, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, id := range ids {
				before[i] = p.HMGet(ctx, s.metaKey(id), sideFields...)
			}
			return nil
		}); err != nil {
			return 0, fmt.Errorf("remove: %w", err)
		}
	}
	keys := func(id string) []string {
		k := s.scriptKeys(id)
		if !s.split && extra != "" {
			k = append(k, extra)
		}
		return k
	}
	now := nanos(s.now())
	cmds := make([]*goredis.Cmd, len(ids))
	_, _ = s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = removeScript.EvalSha(ctx, p, keys(id), now, id, "1")
		}
		return nil
	})
	n := 0
	var drop []int
	for i, c := range cmds {
		res, err := c.Text()
		if goredis.HasErrorPrefix(err, "NOSCRIPT") {
			res, err = removeScript.Run(ctx, s.client, keys(ids[i]), now, ids[i], "1").Text()
		}
		if err != nil {
			return n, fmt.Errorf("remove %s: %w", ids[i], err)
		}
		switch res {
		case replyExpired:
			n++
			drop = append(drop, i)
		case replyMissing:
			drop = append(drop, i)
		case replyLive:
			if s.split {
				if err := s.reindex(ctx, ids[i]); err != nil {
					return n, fmt.Errorf("remove %s: index: %w", ids[i], err)
				}
			}
		}
	}
	if s.split && len(drop) > 0 {
		if err := unplaceScript.Load(ctx, s.client).Err(); err != nil {
			return n, fmt.Errorf("remove: index: %w", err)
		}
		if _, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, i := range drop {
				b := readPlaced(ids[i], before[i].Val())
				unplaceScript.EvalSha(ctx, p, s.unplaceKeys(b.status, b.labels, extra), ids[i])
			}
			return nil
		}); err != nil {
			return n, fmt.Errorf("remove: index: %w", err)
		}
		gone := make([]string, len(drop))
		for j, i := range drop {
			gone[j] = ids[i]
		}
		if err := s.unsearch(ctx, gone...); err != nil {
			return n, fmt.Errorf("remove: text index: %w", err)
		}
	}
	return n, nil
}
