package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/unixnano"
)

// Load implements cairn.Store. The session row and its events are read in
// one read transaction on a reader connection, so they agree even while
// another writer appends. Each event is checked against its checksum, and
// the seqs against the session's last seq: a session that fails is
// damaged (a *driver.DamagedError), and stays so for this Store.
func (s *Store) Load(ctx context.Context, id string, fromSeq int64) (*cairn.Record, error) {
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	rec, err := s.load(ctx, id, max(fromSeq, 1))
	if err != nil {
		if corrupt(err) {
			s.damage.noteFile(err)
			d := &driver.DamagedError{Session: id, Where: s.path, Msg: describe(err)}
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
	info, exp, err := s.scanInfo(tx.QueryRowContext(ctx, `SELECT `+infoColumns+`, expires_at, damage
		FROM sessions WHERE namespace = ? AND id = ?`, s.opts.Namespace, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, cairn.ErrNotFound
	}
	if d, ok := errors.AsType[*driver.DamagedError](err); ok {
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
	rows, err := tx.QueryContext(ctx, loadEventsSQL, s.opts.Namespace, id, from)
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

// loadEventsSQL reads a session's events from a seq on: a range of the
// events' primary key, (namespace, session_id, seq), already in seq
// order, so a load from a snapshot's seq reads only the events after it.
const loadEventsSQL = `SELECT seq, envelope FROM events
	WHERE namespace = ? AND session_id = ? AND seq >= ? ORDER BY seq`

// damaged records and returns the damage of session id found at seq.
func (s *Store) damaged(id string, seq int64, msg string) error {
	d := &driver.DamagedError{Session: id, Where: fmt.Sprintf("%s, events table, seq %d", s.path, seq), Msg: msg}
	s.damage.note(d)
	return d
}

// infoColumns are the sessions columns scanInfo reads, in its order,
// before expires_at and damage.
const infoColumns = `id, created_at, updated_at, status, steps, first_message, labels, last_seq`

// scanInfo scans infoColumns, then expires_at and damage. A session whose
// row records damage to its events (migration 0006), or whose labels do
// not decode, is returned with its *driver.DamagedError, which the store
// notes.
func (s *Store) scanInfo(row interface{ Scan(...any) error }) (cairn.SessionInfo, int64, error) {
	var (
		info             cairn.SessionInfo
		created, updated int64
		exp              int64
		status, labels   string
		damage           string
	)
	if err := row.Scan(&info.ID, &created, &updated, &status, &info.Steps, &info.FirstMessage, &labels,
		&info.LastSeq, &exp, &damage); err != nil {
		return info, 0, err
	}
	info.CreatedAt, info.UpdatedAt, info.Status = unixnano.Time(created), unixnano.Time(updated), cairn.Status(status)
	info.Labels = map[string]string{}
	if err := json.Unmarshal([]byte(labels), &info.Labels); err != nil {
		d := &driver.DamagedError{Session: info.ID, Where: "sessions table, labels",
			Msg: "the stored labels do not decode: " + err.Error()}
		s.damage.note(d)
		return info, exp, d
	}
	if damage != "" {
		return info, exp, s.recorded(info.ID, damage)
	}
	return info, exp, nil
}

// recorded notes and returns the damage that session id's row records
// (see migration 0006): an event row deleted or changed by something
// other than the store.
func (s *Store) recorded(id, damage string) *driver.DamagedError {
	d := &driver.DamagedError{Session: id, Where: s.path + ", events table", Msg: damage + "; nothing is written to the session"}
	s.damage.note(d)
	return d
}

// List implements cairn.Store. Filters, order, the cursor and the page
// size are all applied by SQLite, through the indexes that keep the cost of
// a page independent of the namespace's size (see listQuery); expired
// sessions are left out on the store's clock.
func (s *Store) List(ctx context.Context, opts cairn.ListOptions) (*cairn.ListPage, error) {
	if err := s.guard.Check(); err != nil {
		return nil, err
	}
	page := &cairn.ListPage{Sessions: []cairn.SessionInfo{}}
	query, args, err := s.listQuery(ctx, opts)
	if err != nil {
		return nil, s.fail("list", "", err)
	}
	if query == "" {
		return page, nil
	}
	n := driver.PageSize(opts)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.fail("list", "", err)
	}
	defer rows.Close()
	for rows.Next() {
		info, _, err := s.scanInfo(rows)
		if _, ok := errors.AsType[*driver.DamagedError](err); ok {
			// Listed as damaged (scanInfo noted it); the others go on.
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

// fewCandidates is the number of sessions under which a List with a
// prefix reads the sessions that have it and sorts them, rather than
// walking an index in List order until a page is full.
//
// Reading M candidates costs M lookups and a sort of M rows; walking in
// List order costs about page*N/M rows for N sessions (the walk stops
// once a page is full), or all N when nothing matches. SQLite has no
// statistics of ours to choose between them, so listQuery counts the
// candidates first, up to this number (an index range, stopped there):
// below it, reading them costs at most that many rows; at it or above,
// walking costs at most page*N/fewCandidates rows, 10,000 at a million
// sessions and the default page. A label needs no such choice: its range
// of session_labels_in_order is in List order already (with several
// labels, the count picks the one with the fewest sessions to walk).
var fewCandidates = 10000 // a variable for the tests of both plans

// listSQL is a query being built: its text and arguments.
type listSQL struct {
	strings.Builder
	args []any
}

func (q *listSQL) add(text string, args ...any) {
	q.WriteString(text)
	q.args = append(q.args, args...)
}

// in returns "(?, ?, …)" for n values.
func in(n int) string { return "(?" + strings.Repeat(", ?", n-1) + ")" }

// listQuery builds List's query, which reads one more row than the page
// holds to tell whether there is a next page; an empty query for a List
// that matches nothing without asking SQLite. Every plan it makes reads a
// number of rows bounded by the page, or by what the filters match, never
// by the namespace's size (the exception: a walk in List order while a
// prefix matches fewCandidates sessions or more; see there):
//
//   - a prefix with fewer than fewCandidates sessions: their range of the
//     primary key (namespace, id), then a sort;
//   - otherwise with labels: the range of one label in
//     session_labels_in_order (the one with the fewest sessions), in List
//     order, each session by its key;
//   - otherwise, with one status: sessions_by_status, in List order;
//   - with several: one such walk per status, each stopped after a page,
//     merged (an IN list would read every session of the statuses and
//     sort them, the whole namespace for a common status);
//   - otherwise sessions_by_update, in List order.
//
// The other filters, the cursor and expiry are conditions on each row
// read; the other labels are looked up by session_labels' key.
func (s *Store) listQuery(ctx context.Context, opts cairn.ListOptions) (string, []any, error) {
	var lo, hi string
	if opts.Prefix != "" {
		var ok bool
		if lo, hi, ok = driver.PrefixRange(opts.Prefix); !ok {
			return "", nil, nil
		}
	}
	keys := slices.Sorted(maps.Keys(opts.Labels))
	// The plan: the prefix's range, a label's walk (the label of key by),
	// or a walk in List order.
	byPrefix, byLabel, by := false, false, ""
	if opts.Prefix != "" {
		n, err := s.countUpTo(ctx, `SELECT 1 FROM sessions WHERE namespace = ? AND id >= ? AND id < ?`,
			s.opts.Namespace, lo, hi)
		if err != nil {
			return "", nil, err
		}
		byPrefix = n < fewCandidates
	}
	if !byPrefix && len(keys) > 0 {
		byLabel, by = true, keys[0]
	}
	if byLabel && len(keys) > 1 {
		least := -1
		for _, k := range keys {
			n, err := s.countUpTo(ctx, `SELECT 1 FROM session_labels WHERE namespace = ? AND key = ? AND value = ?`,
				s.opts.Namespace, k, opts.Labels[k])
			if err != nil {
				return "", nil, err
			}
			if least < 0 || n < least {
				by, least = k, n
			}
		}
	}
	// A label's walk reads the order and the cursor from its index, d.
	atCol, idCol, order := "s.updated_at", "s.id", ` ORDER BY updated_at DESC, id DESC LIMIT ?`
	if byLabel {
		atCol, idCol, order = "d.updated_at", "d.session_id", ` ORDER BY d.updated_at DESC, d.session_id DESC LIMIT ?`
	}

	// The conditions on a row, but for its status.
	var where listSQL
	where.add(` AND (s.expires_at = 0 OR s.expires_at > ?)`, unixnano.Of(s.opts.Now()))
	if opts.Prefix != "" {
		// Unary + keeps a walk in List order from trading its index for
		// the primary key's range (and a sort of all of it).
		plus := "+"
		if byPrefix {
			plus = ""
		}
		where.add(` AND `+plus+`s.id >= ? AND `+plus+`s.id < ?`, lo, hi)
	}
	for _, k := range keys {
		if !byLabel || k != by {
			where.add(` AND EXISTS (SELECT 1 FROM session_labels AS l WHERE l.namespace = s.namespace
				AND l.session_id = s.id AND l.key = ? AND l.value = ?)`, k, opts.Labels[k])
		}
	}
	if !opts.UpdatedAfter.IsZero() {
		where.add(` AND `+atCol+` > ?`, unixnano.Of(opts.UpdatedAfter))
	}
	if !opts.UpdatedBefore.IsZero() {
		where.add(` AND `+atCol+` < ?`, unixnano.Of(opts.UpdatedBefore))
	}
	if opts.Cursor != "" {
		c, err := driver.ParseCursor(opts.Cursor)
		if err != nil {
			return "", nil, err
		}
		n := unixnano.Of(c.UpdatedAt)
		where.add(` AND `+atCol+` <= ? AND (`+atCol+` < ? OR `+idCol+` < ?)`, n, n, c.ID)
	}
	limit := driver.PageSize(opts) + 1

	// A session this store found damaged has the status damaged, whatever
	// its row says.
	var damaged []any
	if len(opts.Status) > 0 {
		for _, id := range s.damage.ids() {
			damaged = append(damaged, id)
		}
	}
	var q listSQL
	switch {
	case byPrefix || byLabel:
		// NOT INDEXED: the sessions are read by their key (the table's
		// own b-tree), not walked through an index in List order.
		if byPrefix {
			q.add(`SELECT `+sessionColumns+` FROM sessions AS s NOT INDEXED WHERE s.namespace = ?`, s.opts.Namespace)
		} else {
			q.add(`SELECT `+sessionColumns+` FROM session_labels AS d INDEXED BY session_labels_in_order
				CROSS JOIN sessions AS s NOT INDEXED
				WHERE d.namespace = ? AND d.key = ? AND d.value = ? AND s.namespace = d.namespace AND s.id = d.session_id`,
				s.opts.Namespace, by, opts.Labels[by])
		}
		if len(opts.Status) > 0 {
			q.add(` AND (s.status IN `+in(len(opts.Status)), statusArgs(opts.Status)...)
			if len(damaged) > 0 {
				q.add(` AND s.id NOT IN `+in(len(damaged)), damaged...)
				if slices.Contains(opts.Status, cairn.StatusDamaged) {
					q.add(` OR s.id IN `+in(len(damaged)), damaged...)
				}
			}
			q.add(`)`)
		}
		q.add(where.String(), where.args...)
		q.add(order, limit)
	case len(opts.Status) == 0:
		q.add(`SELECT `+sessionColumns+` FROM sessions AS s WHERE s.namespace = ?`, s.opts.Namespace)
		q.add(where.String(), where.args...)
		q.add(order, limit)
	default:
		// One arm per status, each in List order and cut at a page.
		var arms []listSQL
		for _, st := range slices.Compact(slices.Sorted(slices.Values(opts.Status))) {
			var a listSQL
			a.add(`SELECT `+sessionColumns+` FROM sessions AS s WHERE s.namespace = ? AND s.status = ?`,
				s.opts.Namespace, string(st))
			if len(damaged) > 0 {
				a.add(` AND s.id NOT IN `+in(len(damaged)), damaged...)
			}
			arms = append(arms, a)
		}
		if len(damaged) > 0 && slices.Contains(opts.Status, cairn.StatusDamaged) {
			var a listSQL
			a.add(`SELECT `+sessionColumns+` FROM sessions AS s WHERE s.namespace = ? AND s.id IN `+in(len(damaged)),
				append([]any{s.opts.Namespace}, damaged...)...)
			arms = append(arms, a)
		}
		if len(arms) == 1 {
			q.add(arms[0].String(), arms[0].args...)
			q.add(where.String(), where.args...)
			q.add(order, limit)
			break
		}
		for i, a := range arms {
			if i > 0 {
				q.WriteString(` UNION ALL `)
			}
			q.add(`SELECT * FROM (`+a.String(), a.args...)
			q.add(where.String(), where.args...)
			q.add(order+`)`, limit)
		}
		q.add(order, limit)
	}
	return q.String(), q.args, nil
}

// sessionColumns are infoColumns, expires_at and damage of the sessions
// table as s, in scanInfo's order.
const sessionColumns = `s.id, s.created_at, s.updated_at, s.status, s.steps, s.first_message, s.labels, s.last_seq, s.expires_at, s.damage`

func statusArgs(sts []cairn.Status) []any {
	out := make([]any, len(sts))
	for i, st := range sts {
		out[i] = string(st)
	}
	return out
}

// countUpTo counts the rows query returns, stopping at fewCandidates.
func (s *Store) countUpTo(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (`+query+` LIMIT ?)`, append(args, fewCandidates)...).Scan(&n)
	return n, err
}

// Stat implements cairn.Store: Load's info, with no event read.
func (s *Store) Stat(ctx context.Context, id string) (*cairn.SessionInfo, error) {
	rec, err := s.Load(ctx, id, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	return &rec.Info, nil
}
