package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/envsum"
)

// Create implements cairn.Store. A session whose TTL has passed but that
// was not swept yet is erased first, so its ID is free again.
func (s *Store) Create(ctx context.Context, meta cairn.SessionMeta) error {
	if err := s.guard.Session(meta.ID); err != nil {
		return err
	}
	labels, err := json.Marshal(cloneLabels(meta.Labels))
	if err != nil {
		return fmt.Errorf("create %s: labels: %w", meta.ID, err)
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		now := s.opts.Now().UTC()
		var exp int64
		err := tx.QueryRowContext(ctx, `SELECT expires_at FROM sessions WHERE namespace = ? AND id = ?`,
			s.opts.Namespace, meta.ID).Scan(&exp)
		switch {
		case err == nil && !expired(exp, now):
			return cairn.ErrExists
		case err == nil:
			if err := s.erase(ctx, tx, meta.ID); err != nil {
				return err
			}
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		created := meta.CreatedAt
		if created.IsZero() {
			created = now
		}
		s.damage.forget(meta.ID)
		_, err = tx.ExecContext(ctx, `INSERT INTO sessions
			(namespace, id, created_at, updated_at, expires_at, status, steps, first_message, labels, last_seq)
			VALUES (?, ?, ?, ?, ?, ?, 0, '', ?, 0)`,
			s.opts.Namespace, meta.ID, nanos(created), nanos(now), nanos(s.opts.ExpiresAt(now)),
			string(cairn.StatusNew), string(labels))
		return err
	})
	return s.fail("create", meta.ID, err)
}

// Append implements cairn.Store. It runs in one immediate transaction:
// read the session's head row by its key, insert the events, update the
// head row. Nothing in it reads or counts earlier events, so its cost does
// not grow with the history. Appends from many goroutines that arrive
// together share one transaction and one commit (see submit); one that
// fails its checks writes nothing, so it leaves the others be.
func (s *Store) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	if err := s.guard.Append(s.opts.Limits, id, expectSeq, events); err != nil {
		return err
	}
	bodies, err := envelopes(events)
	if err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.writable(id); err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	err = s.submit(&appendReq{ctx: ctx, id: id, expectSeq: expectSeq, events: events, bodies: bodies,
		delta: driver.Summarize(events)})
	return s.fail("append", id, err)
}

// Delete implements cairn.Store. The session's events and its row go in one
// transaction. With secure_delete on, SQLite overwrites the freed space in
// the database file; copies of the pages may stay in the WAL file until the
// next checkpoint.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.guard.Session(id); err != nil {
		return err
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var exp int64
		err := tx.QueryRowContext(ctx, `SELECT expires_at FROM sessions WHERE namespace = ? AND id = ?`,
			s.opts.Namespace, id).Scan(&exp)
		if errors.Is(err, sql.ErrNoRows) {
			return cairn.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := s.erase(ctx, tx, id); err != nil {
			return err
		}
		if expired(exp, s.opts.Now()) {
			// Already invisible: erase what was left, and say so. The
			// erasure is committed all the same.
			return errExpiredErased
		}
		return nil
	})
	if err == nil || errors.Is(err, errExpiredErased) {
		s.damage.forget(id)
	}
	if errors.Is(err, errExpiredErased) {
		return fmt.Errorf("delete %s: %w", id, cairn.ErrNotFound)
	}
	return s.fail("delete", id, err)
}

// errExpiredErased tells Delete's transaction to commit and report
// ErrNotFound.
var errExpiredErased = errors.New("expired session erased")

// erase deletes a session's events and row inside tx.
func (s *Store) erase(ctx context.Context, tx *sql.Tx, id string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE namespace = ? AND session_id = ?`,
		s.opts.Namespace, id); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE namespace = ? AND id = ?`, s.opts.Namespace, id)
	return err
}

// Sweep implements cairn.Sweeper: it deletes every expired session of the
// namespace, with its events, in one transaction and returns how many.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	var n int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		now := nanos(s.opts.Now())
		if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE namespace = ? AND session_id IN
			(SELECT id FROM sessions WHERE namespace = ? AND expires_at > 0 AND expires_at <= ?)`,
			s.opts.Namespace, s.opts.Namespace, now); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE namespace = ? AND expires_at > 0 AND expires_at <= ?`,
			s.opts.Namespace, now)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, s.fail("sweep", "", err)
	}
	return int(n), nil
}

// envelopes returns the events' envelopes as stored: each as
// driver.AppendEnvelope writes it, led by its checksum (see checksum.go).
// They are cut from one string, so that encoding an append allocates
// about twice, however many events it has.
func envelopes(events []cairn.Event) ([]string, error) {
	n := 0
	for _, e := range events {
		n += len(e.Data) + len(e.Kind) + len(e.Run) + 112 + envsum.Len
	}
	buf := make([]byte, 0, n)
	ends := make([]int, len(events))
	for i, e := range events {
		var err error
		if buf, err = envsum.Append(buf, e); err != nil {
			return nil, err
		}
		ends[i] = len(buf)
	}
	all := string(buf)
	bodies := make([]string, len(events))
	start := 0
	for i, end := range ends {
		bodies[i], start = all[start:end], end
	}
	return bodies, nil
}

func cloneLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}
