package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Load implements cairn.Store. The session row and its events are read in
// one repeatable-read transaction, so the events always match the info's
// last seq even while others append.
func (s *Store) Load(ctx context.Context, id string, fromSeq int64) (*cairn.Record, error) {
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	var rec *cairn.Record
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		rec, err = s.load(ctx, tx, id, max(fromSeq, 1))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", id, translate(err))
	}
	return rec, nil
}

func (s *Store) load(ctx context.Context, tx pgx.Tx, id string, from int64) (*cairn.Record, error) {
	b := &pgx.Batch{}
	b.Queue(s.sql.info, id, s.opts.Now().UTC())
	b.Queue(s.sql.loadEvents, id, from)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	info, err := scanInfo(br.QueryRow())
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, cairn.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	evs := make([]cairn.Event, 0, max(info.LastSeq-from+1, 0))
	var (
		seq int64
		env []byte
	)
	for rows.Next() {
		if err := rows.Scan(&seq, &env); err != nil {
			return nil, err
		}
		want := from + int64(len(evs))
		// env is the row's own copy (pgx allocates it per Scan), so the
		// event's data may alias it.
		e, ok := driver.ParseEnvelope(env)
		if !ok {
			if err := json.Unmarshal(env, &e); err != nil {
				return nil, s.damaged(id, seq, "the stored envelope does not decode: "+err.Error())
			}
		}
		switch {
		case seq != want:
			return nil, s.damaged(id, want, fmt.Sprintf("the event of seq %d is missing: the stored events jump to seq %d", want, seq))
		case e.Seq != seq:
			return nil, s.damaged(id, seq, fmt.Sprintf("the row holds an envelope of seq %d", e.Seq))
		}
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if n := int64(len(evs)); n != max(info.LastSeq-from+1, 0) {
		return nil, s.damaged(id, from+n, fmt.Sprintf("%d events are stored from seq %d, and the session's last seq is %d", n, from, info.LastSeq))
	}
	return &cairn.Record{Info: info, Events: evs}, nil
}

// damaged is the damage of session id's events found at seq: a row
// missing, or one that is not the event of its seq. Only something other
// than the store deletes or changes event rows.
func (s *Store) damaged(id string, seq int64, msg string) *driver.DamagedError {
	return &driver.DamagedError{Session: id, Where: fmt.Sprintf("%s.events, seq %d", s.schema, seq), Msg: msg}
}

// infoColumns are the columns scanInfo reads, in order.
const infoColumns = "id, created_at, updated_at, status, steps, first_message, labels, last_seq"

func scanInfo(row pgx.Row) (cairn.SessionInfo, error) {
	var (
		info   cairn.SessionInfo
		status string
	)
	err := row.Scan(&info.ID, &info.CreatedAt, &info.UpdatedAt, &status, &info.Steps, &info.FirstMessage, &info.Labels, &info.LastSeq)
	if err != nil {
		return info, err
	}
	info.Status = cairn.Status(status)
	info.CreatedAt = info.CreatedAt.UTC()
	info.UpdatedAt = info.UpdatedAt.UTC()
	if info.Labels == nil {
		info.Labels = map[string]string{}
	}
	return info, nil
}

// List implements cairn.Store. Filters, order and cursor are all in SQL
// (see listQuery for the indexes that serve them). Times are kept to the
// microsecond, PostgreSQL's precision.
func (s *Store) List(ctx context.Context, opts cairn.ListOptions) (*cairn.ListPage, error) {
	if err := s.guard.Check(); err != nil {
		return nil, err
	}
	q, args, err := s.listQuery(opts)
	if err != nil {
		return nil, err
	}
	if q == "" {
		return &cairn.ListPage{Sessions: []cairn.SessionInfo{}}, nil
	}
	// Unprepared (an unnamed statement), so that PostgreSQL plans each
	// List with its values: a cached generic plan cannot tell a prefix
	// or a label that a few sessions have from one that most have, and
	// after five Lists it walked the whole updated_at index for a
	// mistyped ID.
	rows, err := s.pool.Query(ctx, q, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("list: %w", translate(err))
	}
	defer rows.Close()
	var infos []cairn.SessionInfo
	for rows.Next() {
		info, err := scanInfo(rows)
		if err != nil {
			return nil, fmt.Errorf("list: %w", translate(err))
		}
		infos = append(infos, info)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list: %w", translate(err))
	}
	page := &cairn.ListPage{Sessions: infos}
	if n := driver.PageSize(opts); len(infos) > n {
		page.Sessions = infos[:n]
		last := infos[n-1]
		page.Next = driver.Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}.Encode()
	}
	return page, nil
}

// listQuery builds the SELECT of one List page: one row more than the page
// size, to know whether another page follows; an empty query for a List
// that matches nothing without asking. A label walks session_labels_order_idx,
// a prefix a range of the primary key, one status sessions_status_idx,
// several statuses one such walk each, merged, and no filter
// sessions_updated_idx; why each: docs/STORES.md, "The PostgreSQL store", List.
func (s *Store) listQuery(opts cairn.ListOptions) (string, []any, error) {
	// Times go as text (the query is not prepared), which PostgreSQL
	// rounds to the microsecond: they are cut to it here instead.
	args := []any{s.opts.Now().UTC().Truncate(time.Microsecond)}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// at and id: the columns of List's order, those of the label's rows
	// when a label is walked.
	from, at, id := s.sql.sessions+" AS s", "s.updated_at", "s.id"
	where := []string{liveSQL("$1")}
	keys := slices.Sorted(maps.Keys(opts.Labels))
	if len(keys) > 0 {
		from, at, id = s.sql.labels+" AS l JOIN "+s.sql.sessions+" AS s ON s.id = l.id", "l.updated_at", "l.id"
		where = append(where, "l.key = "+arg(keys[0])+"::text", "l.value = "+arg(opts.Labels[keys[0]])+"::text")
		for _, k := range keys[1:] {
			// A semi-join the planner may also drive from, for a label
			// rarer than the walked one (then it sorts what it holds).
			where = append(where, "EXISTS (SELECT 1 FROM "+s.sql.labels+" AS o WHERE o.id = s.id AND o.key = "+
				arg(k)+"::text AND o.value = "+arg(opts.Labels[k])+"::text)")
		}
	}
	if opts.Prefix != "" {
		lo, hi, ok := driver.PrefixRange(opts.Prefix)
		if !ok {
			return "", nil, nil
		}
		where = append(where, "s.id >= "+arg(lo)+"::text", "s.id < "+arg(hi)+"::text")
	}
	if !opts.UpdatedAfter.IsZero() {
		// Truncating to the microsecond keeps "strictly after" exact.
		where = append(where, at+" > "+arg(opts.UpdatedAfter.UTC().Truncate(time.Microsecond))+"::timestamptz")
	}
	if !opts.UpdatedBefore.IsZero() {
		where = append(where, at+" < "+arg(ceilMicro(opts.UpdatedBefore.UTC()))+"::timestamptz")
	}
	if opts.Cursor != "" {
		c, err := driver.ParseCursor(opts.Cursor)
		if err != nil {
			return "", nil, err
		}
		where = append(where, "("+at+", "+id+") < ("+arg(c.UpdatedAt)+"::timestamptz, "+arg(c.ID)+"::text)")
	}
	limit := arg(driver.PageSize(opts) + 1)
	order := " ORDER BY " + at + " DESC, " + id + " DESC LIMIT " + limit
	statuses := slices.Compact(slices.Sorted(slices.Values(opts.Status)))
	if len(keys) > 0 && len(statuses) > 0 {
		// The label's walk checks the status of each session it reads.
		where = append(where, "s.status = ANY("+arg(statusTexts(statuses))+"::text[])")
		statuses = nil
	}
	if len(statuses) <= 1 {
		if len(statuses) == 1 {
			where = append(where, "s.status = "+arg(string(statuses[0]))+"::text")
		}
		return "SELECT " + sessionColumns + " FROM " + from + " WHERE " + strings.Join(where, " AND ") + order, args, nil
	}
	var q strings.Builder
	for i, st := range statuses {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		q.WriteString("(SELECT " + sessionColumns + " FROM " + from + " WHERE s.status = " + arg(string(st)) +
			"::text AND " + strings.Join(where, " AND ") + order + ")")
	}
	q.WriteString(" ORDER BY updated_at DESC, id DESC LIMIT " + limit)
	return q.String(), args, nil
}

// sessionColumns are infoColumns of the sessions table as s.
const sessionColumns = "s.id, s.created_at, s.updated_at, s.status, s.steps, s.first_message, s.labels, s.last_seq"

func statusTexts(sts []cairn.Status) []string {
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = string(st)
	}
	return out
}

// ceilMicro rounds t up to the microsecond, so that "strictly before" an
// instant between two microseconds keeps the earlier one.
func ceilMicro(t time.Time) time.Time {
	if t.Nanosecond()%1000 == 0 {
		return t
	}
	return t.Truncate(time.Microsecond).Add(time.Microsecond)
}

// Stat implements cairn.Store: Load's info, with no event read.
func (s *Store) Stat(ctx context.Context, id string) (*cairn.SessionInfo, error) {
	rec, err := s.Load(ctx, id, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	return &rec.Info, nil
}
