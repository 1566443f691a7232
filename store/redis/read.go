package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
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
	if m == nil || driver.Expired(m.expires, s.opts.Now()) {
		return nil, fmt.Errorf("load %s: %w", id, cairn.ErrNotFound)
	}
	raw := evCmd.Val()
	events := make([]cairn.Event, len(raw))
	for i, r := range raw {
		// b is a copy of the reply's string, so the event's data may
		// alias it.
		b := []byte(r)
		var ok bool
		seq := from + int64(i)
		if events[i], ok = driver.ParseEnvelope(b); !ok {
			if err := json.Unmarshal(b, &events[i]); err != nil {
				return nil, fmt.Errorf("load %s: %w", id, s.damaged(id, seq, "the stored envelope does not decode: "+err.Error()))
			}
		}
		if events[i].Seq != seq {
			return nil, fmt.Errorf("load %s: %w", id, s.damaged(id, seq, fmt.Sprintf(
				"the list holds the event of seq %d where seq %d belongs: events were removed or moved", events[i].Seq, seq)))
		}
	}
	// A list that lost its last elements holds fewer events than the
	// meta's last seq: a history cut short, not a shorter one.
	if n, want := int64(len(raw)), max(m.info.LastSeq-from+1, 0); n != want {
		return nil, fmt.Errorf("load %s: %w", id, s.damaged(id, from+n, fmt.Sprintf(
			"the list holds %d events from seq %d, and the session's last seq is %d", n, from, m.info.LastSeq)))
	}
	return &cairn.Record{Info: m.info, Events: events}, nil
}

// damaged is the damage of session id's events list found at seq. Only
// something other than the store removes or changes its elements.
func (s *Store) damaged(id string, seq int64, msg string) *driver.DamagedError {
	return &driver.DamagedError{Session: id, Where: fmt.Sprintf("%s, seq %d", s.eventsKey(id), seq), Msg: msg}
}

// List implements cairn.Store. Unfiltered, it walks the namespace index
// from the newest score down, in batches, starting at the cursor's time;
// reads the batch's metas in one pipeline; and stops once it holds more
// than a page of matching sessions that no session further down can
// precede. A status or label filter walks the side index that serves it
// the same way (the status sets of the filter, or the smallest label set
// of the filter when it is smaller still), so a filter that matches few
// sessions reads only those. A prefix reads the IDs of its range in the ID
// set and their metas: what it costs follows the sessions it matches.
// Index entries whose session is gone are removed, and expired sessions
// purged, on the way.
func (s *Store) List(ctx context.Context, opts cairn.ListOptions) (_ *cairn.ListPage, err error) {
	defer unavailable(&err)
	if err := s.guard.Check(); err != nil {
		return nil, err
	}
	l := &lister{s: s, opts: opts, found: map[string]cairn.SessionInfo{}, prune: map[string][]string{}, now: s.opts.Now()}
	if opts.Cursor != "" {
		c, err := driver.ParseCursor(opts.Cursor)
		if err != nil {
			return nil, err
		}
		l.cur = &c
	}
	if opts.Prefix != "" || len(opts.Status) > 0 || len(opts.Labels) > 0 {
		if err := s.sideReady(ctx); err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
	}
	var sets []string
	switch {
	case opts.Prefix != "":
		err = l.prefix(ctx)
	case len(opts.Status) > 0 || len(opts.Labels) > 0:
		sets, err = s.filterSets(ctx, opts)
		for _, key := range sets {
			if err == nil {
				err = l.walk(ctx, key)
			}
		}
	default:
		err = l.walk(ctx, s.index)
	}
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	for key, ids := range l.prune {
		if key == s.index {
			key = ""
		}
		if _, err := s.remove(ctx, ids, key); err != nil {
			return nil, fmt.Errorf("list: prune: %w", err)
		}
	}
	all := make([]cairn.SessionInfo, 0, len(l.found))
	for _, info := range l.found {
		all = append(all, info)
	}
	return driver.PageInfos(all, opts)
}

// filterSets returns the side indexes a status or label filter walks: the
// sets of its statuses, or the smallest set of its labels when that holds
// fewer sessions than those together (or the filter names no status).
func (s *Store) filterSets(ctx context.Context, opts cairn.ListOptions) ([]string, error) {
	var keys []string
	for _, st := range opts.Status {
		keys = append(keys, s.statusKey(st))
	}
	nst := len(keys)
	for k, v := range opts.Labels {
		keys = append(keys, s.labelKey(k, v))
	}
	cmds := make([]*goredis.IntCmd, len(keys))
	_, err := retry(ctx, func(ctx context.Context) ([]goredis.Cmder, error) {
		return s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, k := range keys {
				cmds[i] = p.ZCard(ctx, k)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	statuses := int64(0)
	for _, c := range cmds[:nst] {
		statuses += c.Val()
	}
	best := -1
	for i := nst; i < len(keys); i++ {
		if best < 0 || cmds[i].Val() < cmds[best].Val() {
			best = i
		}
	}
	if best >= 0 && (nst == 0 || cmds[best].Val() < statuses) {
		return keys[best : best+1], nil
	}
	return slices.Compact(slices.Sorted(slices.Values(keys[:nst]))), nil
}

// lister gathers the sessions of one List call.
type lister struct {
	s     *Store
	opts  cairn.ListOptions
	cur   *driver.Cursor
	now   time.Time
	found map[string]cairn.SessionInfo
	prune map[string][]string // by the side index walked ("" none): entries of sessions missing or expired
}

// walk reads a sorted set of session IDs scored by updated time (the
// namespace index, a status or a label set) from the newest score down,
// in batches, and stops once it holds more than a page of matching
// sessions that nothing further down can precede.
func (l *lister) walk(ctx context.Context, key string) error {
	s := l.s
	rng := s.scoreRange(l.opts, l.cur)
	limit := driver.PageSize(l.opts)
	batch := int64(min(max(2*limit, 64), 1000))
	mine := map[string]cairn.SessionInfo{}
	for offset := int64(0); ; {
		rng.Offset, rng.Count = offset, batch
		entries, err := retry(ctx, func(ctx context.Context) ([]goredis.Z, error) {
			return s.client.ZRevRangeByScoreWithScores(ctx, key, &rng).Result()
		})
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			return nil
		}
		offset += int64(len(entries))
		ids := make([]string, len(entries))
		for i, e := range entries {
			ids[i] = e.Member.(string)
		}
		metas, err := s.readMetas(ctx, ids)
		if err != nil {
			return err
		}
		for i, m := range metas {
			if m == nil || driver.Expired(m.expires, l.now) {
				l.prune[key] = append(l.prune[key], ids[i])
				continue
			}
			if s.split && (float64(score(m.info.UpdatedAt)) != entries[i].Score || key != s.index && !l.belongs(key, m.info)) {
				// Repair an index update lost to a crash or overtaken by
				// another writer's; the order of this page uses the meta.
				if err := s.reindex(ctx, ids[i]); err != nil {
					return err
				}
			}
			if l.take(m.info) {
				mine[ids[i]] = m.info
			}
		}
		if len(entries) < int(batch) || settled(mine, entries[len(entries)-1].Score) > limit {
			return nil
		}
	}
}

// belongs reports whether a session of info belongs in the side index
// key: the set of its status or of one of its labels.
func (l *lister) belongs(key string, info cairn.SessionInfo) bool {
	if key == l.s.statusKey(info.Status) {
		return true
	}
	for k, v := range info.Labels {
		if key == l.s.labelKey(k, v) {
			return true
		}
	}
	return false
}

// take adds info to the sessions found if it passes the filters and comes
// after the cursor, and reports whether it did.
func (l *lister) take(info cairn.SessionInfo) bool {
	if !driver.Match(l.opts, info) || (l.cur != nil && l.cur.Before(info)) {
		return false
	}
	l.found[info.ID] = info
	return true
}

// prefix reads the IDs of the prefix's range of the ID set, in batches,
// and their metas.
func (l *lister) prefix(ctx context.Context) error {
	s := l.s
	const batch = 1000
	rng := goredis.ZRangeBy{Min: "[" + l.opts.Prefix, Max: "(" + l.opts.Prefix + "\xff", Count: batch}
	for {
		ids, err := retry(ctx, func(ctx context.Context) ([]string, error) {
			return s.client.ZRangeByLex(ctx, s.idsKey(), &rng).Result()
		})
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		metas, err := s.readMetas(ctx, ids)
		if err != nil {
			return err
		}
		for i, m := range metas {
			if m == nil || driver.Expired(m.expires, l.now) {
				l.prune[""] = append(l.prune[""], ids[i])
				continue
			}
			l.take(m.info)
		}
		if len(ids) < batch {
			return nil
		}
		rng.Min = "(" + ids[len(ids)-1]
	}
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

// readMetas reads the metas of sessions in one pipeline; a nil meta is a
// session that no longer exists.
func (s *Store) readMetas(ctx context.Context, ids []string) ([]*meta, error) {
	cmds := make([]*goredis.SliceCmd, len(ids))
	_, err := retry(ctx, func(ctx context.Context) ([]goredis.Cmder, error) {
		return s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, id := range ids {
				cmds[i] = p.HMGet(ctx, s.metaKey(id), metaFields...)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	out := make([]*meta, len(ids))
	for i, c := range cmds {
		m, err := readMeta(ids[i], c.Val())
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

// Stat implements cairn.Store: Load's info, with no event read.
func (s *Store) Stat(ctx context.Context, id string) (*cairn.SessionInfo, error) {
	rec, err := s.Load(ctx, id, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	return &rec.Info, nil
}
