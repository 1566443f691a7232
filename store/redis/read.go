package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// metaFields are the fields of a session's meta hash, in the order
// readMeta expects them.
var metaFields = []string{"created_at", "updated_at", "expires_at", "status", "steps", "first_message", "labels", "last_seq"}

// meta is a session's meta hash, decoded.
type meta struct {
	info    cairn.SessionInfo
	expires time.Time // zero: never
}

// readMeta decodes the reply of HMGET meta metaFields for session id. It
// returns nil when the session does not exist.
func readMeta(id string, vals []any) (*meta, error) {
	if len(vals) != len(metaFields) || vals[len(vals)-1] == nil {
		return nil, nil
	}
	str := make([]string, len(vals))
	for i, v := range vals {
		str[i], _ = v.(string)
	}
	var (
		m   = &meta{info: cairn.SessionInfo{ID: id, Status: cairn.Status(str[3]), FirstMessage: str[5]}}
		err error
	)
	bad := func(field string, err error) (*meta, error) {
		return nil, fmt.Errorf("session %s: corrupt meta field %s: %v", id, field, err)
	}
	if m.info.CreatedAt, err = time.Parse(time.RFC3339Nano, str[0]); err != nil {
		return bad("created_at", err)
	}
	if m.info.UpdatedAt, err = time.Parse(time.RFC3339Nano, str[1]); err != nil {
		return bad("updated_at", err)
	}
	exp, err := strconv.ParseInt(str[2], 10, 64)
	if err != nil {
		return bad("expires_at", err)
	}
	if exp != 0 {
		m.expires = time.Unix(0, exp).UTC()
	}
	if m.info.Steps, err = strconv.Atoi(str[4]); err != nil {
		return bad("steps", err)
	}
	if err := json.Unmarshal([]byte(str[6]), &m.info.Labels); err != nil {
		return bad("labels", err)
	}
	if m.info.Labels == nil {
		m.info.Labels = map[string]string{}
	}
	if m.info.LastSeq, err = strconv.ParseInt(str[7], 10, 64); err != nil {
		return bad("last_seq", err)
	}
	return m, nil
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Load implements cairn.Store. The meta and the events from fromSeq on are
// read in one MULTI/EXEC (both keys share a slot), so they agree with each
// other; the events come from one LRANGE starting at fromSeq's position.
func (s *Store) Load(ctx context.Context, id string, fromSeq int64) (_ *cairn.Record, err error) {
	defer unavailable(&err)
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	from := max(fromSeq, 1)
	var (
		metaCmd *goredis.SliceCmd
		evCmd   *goredis.StringSliceCmd
	)
	_, err = retry(ctx, func(ctx context.Context) ([]goredis.Cmder, error) {
		return s.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			metaCmd = p.HMGet(ctx, s.metaKey(id), metaFields...)
			evCmd = p.LRange(ctx, s.eventsKey(id), from-1, -1)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	m, err := readMeta(id, metaCmd.Val())
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	if m == nil || cairn.Expired(m.expires, s.opts.Now()) {
		return nil, fmt.Errorf("load %s: %w", id, cairn.ErrNotFound)
	}
	raw := evCmd.Val()
	events := make([]cairn.Event, len(raw))
	for i, r := range raw {
		// b is a copy of the reply's string, so the event's data may
		// alias it.
		b := []byte(r)
		var ok bool
		if events[i], ok = driver.ParseEnvelope(b); !ok {
			if err := json.Unmarshal(b, &events[i]); err != nil {
				return nil, fmt.Errorf("load %s: event at seq %d: %w", id, from+int64(i), err)
			}
		}
		if events[i].Seq != from+int64(i) {
			return nil, fmt.Errorf("load %s: corrupt history: seq %d where %d belongs", id, events[i].Seq, from+int64(i))
		}
	}
	return &cairn.Record{Info: m.info, Events: events}, nil
}

// List implements cairn.Store. It walks the namespace index from the
// newest score down, in batches, starting at the cursor's time; reads the
// batch's metas in one pipeline; and stops once it holds more than a page
// of matching sessions that no session further down can precede. Index
// entries whose session is gone are removed, and expired sessions purged,
// on the way.
func (s *Store) List(ctx context.Context, opts cairn.ListOptions) (_ *cairn.ListPage, err error) {
	defer unavailable(&err)
	if err := s.guard.Check(); err != nil {
		return nil, err
	}
	var cur *driver.Cursor
	if opts.Cursor != "" {
		c, err := driver.ParseCursor(opts.Cursor)
		if err != nil {
			return nil, err
		}
		cur = &c
	}
	rng := s.scoreRange(opts, cur)
	limit := driver.PageSize(opts)
	batch := int64(min(max(2*limit, 64), 1000))
	now := s.opts.Now()
	var (
		found = map[string]cairn.SessionInfo{}
		prune []string // index entries of missing or expired sessions
	)
	for offset := int64(0); ; {
		rng.Offset, rng.Count = offset, batch
		entries, err := retry(ctx, func(ctx context.Context) ([]goredis.Z, error) {
			return s.client.ZRevRangeByScoreWithScores(ctx, s.index, &rng).Result()
		})
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		if len(entries) == 0 {
			break
		}
		offset += int64(len(entries))
		metas, err := s.readMetas(ctx, entries)
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		for i, m := range metas {
			id := entries[i].Member.(string)
			if m == nil || cairn.Expired(m.expires, now) {
				prune = append(prune, id)
				continue
			}
			if s.split && float64(score(m.info.UpdatedAt)) != entries[i].Score {
				// Repair an index update lost to a crash or overtaken by
				// another writer's; the order of this page uses the meta.
				if err := s.updateIndex(ctx, id, m.info.UpdatedAt, false); err != nil {
					return nil, fmt.Errorf("list: %w", err)
				}
			}
			if driver.Match(opts, m.info) && (cur == nil || !cur.Before(m.info)) {
				found[id] = m.info
			}
		}
		if len(entries) < int(batch) || settled(found, entries[len(entries)-1].Score) > limit {
			break
		}
	}
	if len(prune) > 0 {
		if _, err := s.remove(ctx, prune); err != nil {
			return nil, fmt.Errorf("list: prune: %w", err)
		}
	}
	all := make([]cairn.SessionInfo, 0, len(found))
	for _, info := range found {
		all = append(all, info)
	}
	return driver.PageInfos(all, opts)
}

// scoreRange bounds the index scan by the cursor and the time filters.
func (s *Store) scoreRange(opts cairn.ListOptions, cur *driver.Cursor) goredis.ZRangeBy {
	rng := goredis.ZRangeBy{Min: "-inf", Max: "+inf"}
	hi := int64(0)
	hasHi := false
	if cur != nil {
		hi, hasHi = score(cur.UpdatedAt), true
	}
	if !opts.UpdatedBefore.IsZero() {
		if b := score(opts.UpdatedBefore); !hasHi || b < hi {
			hi, hasHi = b, true
		}
	}
	if hasHi {
		rng.Max = strconv.FormatInt(hi, 10)
	}
	if !opts.UpdatedAfter.IsZero() {
		rng.Min = strconv.FormatInt(score(opts.UpdatedAfter), 10)
	}
	return rng
}

// settled counts the sessions of found that every index entry below a
// score of last must follow in List order: those updated in a later
// microsecond.
func settled(found map[string]cairn.SessionInfo, last float64) int {
	n := 0
	for _, info := range found {
		if float64(score(info.UpdatedAt)) > last {
			n++
		}
	}
	return n
}

// readMetas reads the metas of index entries in one pipeline; a nil meta
// is a session that no longer exists.
func (s *Store) readMetas(ctx context.Context, entries []goredis.Z) ([]*meta, error) {
	cmds := make([]*goredis.SliceCmd, len(entries))
	_, err := retry(ctx, func(ctx context.Context) ([]goredis.Cmder, error) {
		return s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, e := range entries {
				cmds[i] = p.HMGet(ctx, s.metaKey(e.Member.(string)), metaFields...)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	out := make([]*meta, len(entries))
	for i, c := range cmds {
		m, err := readMeta(entries[i].Member.(string), c.Val())
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}
