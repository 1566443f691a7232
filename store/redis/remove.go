package redis

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
)

// Delete implements cairn.Store. One script deletes every key of the
// session (and, unless the store is split, its index entry; a split store
// removes that right after). An Append that arrives later finds no meta
// and gets cairn.ErrNotFound, so it cannot bring the session back.
func (s *Store) Delete(ctx context.Context, id string) (err error) {
	defer unavailable(&err)
	if err := s.guard.Session(id); err != nil {
		return err
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
		if err := s.client.ZRem(ctx, s.index, id).Err(); err != nil {
			return fmt.Errorf("delete %s: index: %w", id, err)
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

// Sweep implements cairn.Sweeper: it walks the namespace index with ZSCAN
// and deletes every session that has expired on the store's clock, with
// its index entry, and drops index entries whose session is already gone.
// It returns the number of expired sessions it deleted. Redis deletes
// expired keys by itself too (every key carries the TTL); Sweep makes it
// happen now, and cleans the index.
func (s *Store) Sweep(ctx context.Context) (_ int, err error) {
	defer unavailable(&err)
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	now := s.opts.Now()
	n := 0
	var cursor uint64
	for {
		kv, next, err := s.client.ZScan(ctx, s.index, cursor, "", 500).Result()
		if err != nil {
			return n, fmt.Errorf("sweep: %w", err)
		}
		entries := make([]goredis.Z, 0, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			entries = append(entries, goredis.Z{Member: kv[i]})
		}
		metas, err := s.readMetas(ctx, entries)
		if err != nil {
			return n, fmt.Errorf("sweep: %w", err)
		}
		var stale []string
		for i, m := range metas {
			if m == nil || cairn.Expired(m.expires, now) {
				stale = append(stale, entries[i].Member.(string))
			}
		}
		k, err := s.remove(ctx, stale)
		n += k
		if err != nil {
			return n, fmt.Errorf("sweep: %w", err)
		}
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

// remove deletes the sessions of ids that have expired, and the index
// entries of those that are gone, in one pipeline of removeScript calls
// (a live session, refreshed in the meantime, is left alone). It returns
// how many expired sessions it deleted.
func (s *Store) remove(ctx context.Context, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	now := nanos(s.now())
	cmds := make([]*goredis.Cmd, len(ids))
	_, _ = s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = removeScript.EvalSha(ctx, p, s.scriptKeys(id), now, id, "1")
		}
		return nil
	})
	n := 0
	var drop []any
	for i, c := range cmds {
		res, err := c.Text()
		if goredis.HasErrorPrefix(err, "NOSCRIPT") {
			res, err = removeScript.Run(ctx, s.client, s.scriptKeys(ids[i]), now, ids[i], "1").Text()
		}
		if err != nil {
			return n, fmt.Errorf("remove %s: %w", ids[i], err)
		}
		switch res {
		case replyExpired:
			n++
			drop = append(drop, ids[i])
		case replyMissing:
			drop = append(drop, ids[i])
		}
	}
	if s.split && len(drop) > 0 {
		if err := s.client.ZRem(ctx, s.index, drop...).Err(); err != nil {
			return n, fmt.Errorf("remove: index: %w", err)
		}
	}
	return n, nil
}
