package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Load implements cairn.Store. The session row and its events are read in
// one read transaction on a reader connection, so they agree even while
// another writer appends. Each event is checked against its checksum, and
// the seqs against the session's last seq: a session that fails is
// damaged (a *cairn.DamagedError), and stays so for this Store.
func (s *Store) Load(ctx context.Context, id string, fromSeq int64) (*cairn.Record, error) {
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	rec, err := s.load(ctx, id, max(fromSeq, 1))
	if err != nil {
		if corrupt(err) {
			s.damage.noteFile(err)
			d := &cairn.DamagedError{Session: id, Where: s.path, Msg: describe(err)}
			s.damage.note(d)
			err = d
		}
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
	if d, ok := errors.AsType[*cairn.DamagedError](err); ok {
		s.damage.note(d)
		return nil, d
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
	rows, err := tx.QueryContext(ctx, `SELECT seq, envelope FROM events
		WHERE namespace = ? AND session_id = ? AND seq >= ? ORDER BY seq`, s.opts.Namespace, id, from)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		scratch []byte
		sealed  bool
		next    = from
	)
	for rows.Next() {
		var (
			seq int64
			raw sql.RawBytes
		)
		if err := rows.Scan(&seq, &raw); err != nil {
			return nil, err
		}
		if seq != next {
			return nil, s.damaged(id, next, fmt.Sprintf("the event of seq %d is missing", next))
		}
		e, ok, msg := storedEvent(raw, &scratch, sealed)
		if msg != "" {
			return nil, s.damaged(id, seq, msg)
		}
		if e.Seq != seq {
			return nil, s.damaged(id, seq, fmt.Sprintf("the stored envelope says seq %d", e.Seq))
		}
		sealed = sealed || ok
		e.At = e.At.UTC()
		rec.Events = append(rec.Events, e)
		next++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if next-1 != info.LastSeq {
		return nil, s.damaged(id, next, fmt.Sprintf("the session's last seq is %d, and its events end at seq %d", info.LastSeq, next-1))
	}
	return rec, nil
}

// damaged records and returns the damage of session id found at seq.
func (s *Store) damaged(id string, seq int64, msg string) error {
	d := &cairn.DamagedError{Session: id, Where: fmt.Sprintf("%s, events table, seq %d", s.path, seq), Msg: msg}
	s.damage.note(d)
	return d
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
		return info, exp, &cairn.DamagedError{Session: info.ID, Where: "sessions table, labels",
			Msg: "the stored labels do not decode: " + err.Error()}
	}
	return info, exp, nil
}

// List implements cairn.Store. Filters, order, the cursor and the page
// size are all applied by SQLite, using the (namespace, updated_at DESC,
// id DESC) index; expired sessions are left out on the store's clock.
func (s *Store) List(ctx context.Context, opts cairn.ListOptions) (*cairn.ListPage, error) {
	if err := s.guard.Check(); err != nil {
		return nil, err
	}
	query, args, err := s.listQuery(opts)
	if err != nil {
		return nil, err
	}
	n := driver.PageSize(opts)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.fail("list", "", err)
	}
	defer rows.Close()
	page := &cairn.ListPage{Sessions: []cairn.SessionInfo{}}
	for rows.Next() {
		info, _, err := scanInfo(rows)
		if d, ok := errors.AsType[*cairn.DamagedError](err); ok {
			s.damage.note(d) // listed as damaged; the others go on
		} else if err != nil {
			return nil, s.fail("list", "", err)
		}
		if s.damage.of(info.ID) != nil {
			info.Status = cairn.StatusDamaged
		}
		page.Sessions = append(page.Sessions, info)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list", "", err)
	}
	if len(page.Sessions) > n {
		page.Sessions = page.Sessions[:n]
		last := page.Sessions[n-1]
		page.Next = driver.Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}.Encode()
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
		// A session this store found damaged has the status damaged,
		// whatever its row says.
		var damaged []any
		for _, id := range s.damage.ids() {
			damaged = append(damaged, id)
		}
		q.WriteString(` AND (status IN (?` + strings.Repeat(`, ?`, len(opts.Status)-1) + `)`)
		for _, st := range opts.Status {
			args = append(args, string(st))
		}
		if len(damaged) > 0 {
			in := `(?` + strings.Repeat(`, ?`, len(damaged)-1) + `)`
			q.WriteString(` AND id NOT IN ` + in)
			args = append(args, damaged...)
			if slices.Contains(opts.Status, cairn.StatusDamaged) {
				q.WriteString(` OR id IN ` + in)
				args = append(args, damaged...)
			}
		}
		q.WriteString(`)`)
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
		c, err := driver.ParseCursor(opts.Cursor)
		if err != nil {
			return "", nil, err
		}
		at := nanos(c.UpdatedAt)
		q.WriteString(` AND updated_at <= ? AND (updated_at < ? OR id < ?)`)
		args = append(args, at, at, c.ID)
	}
	q.WriteString(` ORDER BY updated_at DESC, id DESC LIMIT ?`)
	args = append(args, driver.PageSize(opts)+1)
	return q.String(), args, nil
}
