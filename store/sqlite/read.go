package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn"
)

// Load implements cairn.Store. The session row and its events are read in
// one read transaction on a reader connection, so they agree even while
// another writer appends.
func (s *Store) Load(ctx context.Context, id string, fromSeq int64) (*cairn.Record, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := cairn.ValidateID(id); err != nil {
		return nil, err
	}
	rec, err := s.load(ctx, id, max(fromSeq, 1))
	if err != nil {
		return nil, s.fail("load", id, err)
	}
	return rec, nil
}

func (s *Store) load(ctx context.Context, id string, from int64) (*cairn.Record, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	info, exp, err := scanInfo(tx.QueryRowContext(ctx, `SELECT `+infoColumns+`, expires_at
		FROM sessions WHERE namespace = ? AND id = ?`, s.opts.Namespace, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, cairn.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if expired(exp, s.opts.Now()) {
		return nil, cairn.ErrNotFound
	}
	rec := &cairn.Record{Info: info, Events: []cairn.Event{}}
	if from > info.LastSeq {
		return rec, nil
	}
	rec.Events = make([]cairn.Event, 0, min(info.LastSeq-from+1, 1<<16))
	rows, err := tx.QueryContext(ctx, `SELECT envelope FROM events
		WHERE namespace = ? AND session_id = ? AND seq >= ? ORDER BY seq`, s.opts.Namespace, id, from)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var raw sql.RawBytes
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		e, ok := parseEnvelope(raw)
		if !ok {
			if err := json.Unmarshal(raw, &e); err != nil {
				return nil, fmt.Errorf("event %d: stored envelope does not decode: %w", from+int64(len(rec.Events)), err)
			}
		}
		e.At = e.At.UTC()
		rec.Events = append(rec.Events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return rec, nil
}

// infoColumns are the sessions columns scanInfo reads, in its order.
const infoColumns = `id, created_at, updated_at, status, steps, first_message, labels, last_seq`

// scanInfo scans infoColumns and then expires_at.
func scanInfo(row interface{ Scan(...any) error }) (cairn.SessionInfo, int64, error) {
	var (
		info             cairn.SessionInfo
		created, updated int64
		exp              int64
		status, labels   string
	)
	if err := row.Scan(&info.ID, &created, &updated, &status, &info.Steps, &info.FirstMessage, &labels,
		&info.LastSeq, &exp); err != nil {
		return info, 0, err
	}
	info.CreatedAt, info.UpdatedAt, info.Status = fromNanos(created), fromNanos(updated), cairn.Status(status)
	info.Labels = map[string]string{}
	if err := json.Unmarshal([]byte(labels), &info.Labels); err != nil {
		return info, 0, fmt.Errorf("session %s: stored labels do not decode: %w", info.ID, err)
	}
	return info, exp, nil
}

// List implements cairn.Store. Filters, order, the cursor and the page
// size are all applied by SQLite, using the (namespace, updated_at DESC,
// id DESC) index; expired sessions are left out on the store's clock.
func (s *Store) List(ctx context.Context, opts cairn.ListOptions) (*cairn.ListPage, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	query, args, err := s.listQuery(opts)
	if err != nil {
		return nil, err
	}
	n := opts.PageSize()
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.fail("list", "", err)
	}
	defer rows.Close()
	page := &cairn.ListPage{Sessions: []cairn.SessionInfo{}}
	for rows.Next() {
		info, _, err := scanInfo(rows)
		if err != nil {
			return nil, s.fail("list", "", err)
		}
		page.Sessions = append(page.Sessions, info)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list", "", err)
	}
	if len(page.Sessions) > n {
		page.Sessions = page.Sessions[:n]
		last := page.Sessions[n-1]
		page.Next = cairn.Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}.Encode()
	}
	return page, nil
}

// listQuery builds List's query: one more row than the page holds, to tell
// whether there is a next page.
func (s *Store) listQuery(opts cairn.ListOptions) (string, []any, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + infoColumns + `, expires_at FROM sessions
		WHERE namespace = ? AND (expires_at = 0 OR expires_at > ?)`)
	args := []any{s.opts.Namespace, nanos(s.opts.Now())}
	if len(opts.Status) > 0 {
		q.WriteString(` AND status IN (?` + strings.Repeat(`, ?`, len(opts.Status)-1) + `)`)
		for _, st := range opts.Status {
			args = append(args, string(st))
		}
	}
	for k, v := range opts.Labels {
		q.WriteString(` AND EXISTS (SELECT 1 FROM json_each(labels) WHERE key = ? AND type = 'text' AND value = ?)`)
		args = append(args, k, v)
	}
	if !opts.UpdatedAfter.IsZero() {
		q.WriteString(` AND updated_at > ?`)
		args = append(args, nanos(opts.UpdatedAfter))
	}
	if !opts.UpdatedBefore.IsZero() {
		q.WriteString(` AND updated_at < ?`)
		args = append(args, nanos(opts.UpdatedBefore))
	}
	if opts.Cursor != "" {
		c, err := cairn.ParseCursor(opts.Cursor)
		if err != nil {
			return "", nil, err
		}
		at := nanos(c.UpdatedAt)
		q.WriteString(` AND updated_at <= ? AND (updated_at < ? OR id < ?)`)
		args = append(args, at, at, c.ID)
	}
	q.WriteString(` ORDER BY updated_at DESC, id DESC LIMIT ?`)
	args = append(args, opts.PageSize()+1)
	return q.String(), args, nil
}
