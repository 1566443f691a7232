package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn"
)

var _ cairn.Snapshotter = (*Store)(nil)

// PutSnapshot implements cairn.Snapshotter. It is one statement, so one
// round trip and one transaction: an INSERT fed by the live session's row
// that, on a snapshot already there, replaces it only when its seq is not
// lower (ON CONFLICT DO UPDATE … WHERE, which PostgreSQL evaluates on the
// row's latest version, so racing puts leave the highest). It returns
// whether the session was live; the session's row is not written. A
// Delete that commits first makes the insert fail its foreign key:
// ErrNotFound.
func (s *Store) PutSnapshot(ctx context.Context, id string, snap cairn.Snapshot) error {
	if err := s.guard.Snapshot(id, snap, 0); err != nil {
		return err
	}
	var live bool
	err := s.pool.QueryRow(ctx, s.sql.putSnapshot, id, snap.Seq, snap.Data, s.opts.Now().UTC()).Scan(&live)
	if err != nil {
		return fmt.Errorf("put snapshot %s: %w", id, translate(err))
	}
	if !live {
		return fmt.Errorf("put snapshot %s: %w", id, cairn.ErrNotFound)
	}
	return nil
}

// LoadSnapshot implements cairn.Snapshotter: the live session's row and
// its snapshot, in one query by their keys.
func (s *Store) LoadSnapshot(ctx context.Context, id string) (*cairn.Snapshot, error) {
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	var (
		seq  *int64
		data []byte
	)
	err := s.pool.QueryRow(ctx, s.sql.loadSnapshot, id, s.opts.Now().UTC()).Scan(&seq, &data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("load snapshot %s: %w", id, cairn.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("load snapshot %s: %w", id, translate(err))
	case seq == nil:
		return nil, nil
	}
	return &cairn.Snapshot{Seq: *seq, Data: data}, nil
}

// DropSnapshot implements cairn.Snapshotter: one statement that deletes
// the live session's snapshot and says whether the session was live.
func (s *Store) DropSnapshot(ctx context.Context, id string) error {
	if err := s.guard.Session(id); err != nil {
		return err
	}
	var live bool
	if err := s.pool.QueryRow(ctx, s.sql.dropSnapshot, id, s.opts.Now().UTC()).Scan(&live); err != nil {
		return fmt.Errorf("drop snapshot %s: %w", id, translate(err))
	}
	if !live {
		return fmt.Errorf("drop snapshot %s: %w", id, cairn.ErrNotFound)
	}
	return nil
}

// snapshotStatements are the snapshot calls' SQL for the tables sessions
// and snapshots, named in full.
func snapshotStatements(sessions, snapshots string) (put, load, drop string) {
	live := "SELECT id FROM " + sessions + " WHERE id = $1 AND " + liveSQL("$4")
	// $1 id, $2 seq, $3 data, $4 now.
	put = `WITH live AS (` + live + `),
		put AS (
			INSERT INTO ` + snapshots + ` AS n (session_id, seq, data)
			SELECT id, $2, $3 FROM live
			ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, data = excluded.data
			WHERE n.seq <= excluded.seq
		)
		SELECT EXISTS (SELECT 1 FROM live)`
	// $1 id, $2 now.
	load = "SELECT n.seq, n.data FROM " + sessions + " s LEFT JOIN " + snapshots +
		" n ON n.session_id = s.id WHERE s.id = $1 AND " + liveSQL("$2")
	drop = `WITH live AS (SELECT id FROM ` + sessions + ` WHERE id = $1 AND ` + liveSQL("$2") + `),
		gone AS (DELETE FROM ` + snapshots + ` n USING live WHERE n.session_id = live.id)
		SELECT EXISTS (SELECT 1 FROM live)`
	return put, load, drop
}
