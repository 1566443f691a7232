package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/unixnano"
)

var _ cairn.Snapshotter = (*Store)(nil)

// PutSnapshot implements cairn.Snapshotter. One statement, in an
// immediate transaction, inserts the snapshot only while the session is
// live and replaces the one the session holds only when its seq is not
// lower; when it changes nothing, the session's row says whether it is
// gone (ErrNotFound) or holds a later snapshot (nil). The session's row is
// not written: its updated time and expiry stay as they are.
func (s *Store) PutSnapshot(ctx context.Context, id string, snap cairn.Snapshot) error {
	if err := s.guard.Snapshot(id, snap, 0); err != nil {
		return err
	}
	if err := s.writable(id); err != nil {
		return s.fail("put snapshot", id, err)
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		now := unixnano.Of(s.opts.Now())
		res, err := tx.ExecContext(ctx, `INSERT INTO snapshots (namespace, session_id, seq, data)
			SELECT namespace, id, ?3, ?4 FROM sessions
			WHERE namespace = ?1 AND id = ?2 AND (expires_at = 0 OR expires_at > ?5)
			ON CONFLICT (namespace, session_id) DO UPDATE SET seq = excluded.seq, data = excluded.data
			WHERE excluded.seq >= snapshots.seq`,
			s.opts.Namespace, id, snap.Seq, snap.Data, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		return s.live(ctx, tx, id, now)
	})
	return s.fail("put snapshot", id, err)
}

// live returns nil when session id is live at now, ErrNotFound otherwise.
func (s *Store) live(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string, now int64) error {
	var exp int64
	err := q.QueryRowContext(ctx, `SELECT expires_at FROM sessions WHERE namespace = ? AND id = ?`,
		s.opts.Namespace, id).Scan(&exp)
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && exp != 0 && exp <= now:
		return cairn.ErrNotFound
	}
	return err
}

// loadSnapshotSQL reads a session's expiry and its snapshot, if it has
// one, each by its primary key.
const loadSnapshotSQL = `SELECT s.expires_at, n.seq, n.data FROM sessions AS s
	LEFT JOIN snapshots AS n ON n.namespace = s.namespace AND n.session_id = s.id
	WHERE s.namespace = ? AND s.id = ?`

// LoadSnapshot implements cairn.Snapshotter: the session's row and its
// snapshot, in one query by their keys.
func (s *Store) LoadSnapshot(ctx context.Context, id string) (*cairn.Snapshot, error) {
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	var (
		exp  int64
		seq  sql.NullInt64
		data []byte
	)
	err := s.r.QueryRowContext(ctx, loadSnapshotSQL, s.opts.Namespace, id).Scan(&exp, &seq, &data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, s.fail("load snapshot", id, cairn.ErrNotFound)
	case err != nil:
		return nil, s.fail("load snapshot", id, err)
	case expired(exp, s.opts.Now()):
		return nil, s.fail("load snapshot", id, cairn.ErrNotFound)
	case !seq.Valid:
		return nil, nil
	}
	return &cairn.Snapshot{Seq: seq.Int64, Data: data}, nil
}

// DropSnapshot implements cairn.Snapshotter.
func (s *Store) DropSnapshot(ctx context.Context, id string) error {
	if err := s.guard.Session(id); err != nil {
		return err
	}
	if err := s.fileWritable(); err != nil {
		return s.fail("drop snapshot", id, err)
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := s.live(ctx, tx, id, unixnano.Of(s.opts.Now())); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM snapshots WHERE namespace = ? AND session_id = ?`, s.opts.Namespace, id)
		return err
	})
	return s.fail("drop snapshot", id, err)
}
