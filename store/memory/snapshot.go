package memory

import (
	"bytes"
	"context"

	"github.com/cairnhq/cairn"
)

var _ cairn.Snapshotter = (*Store)(nil)

// PutSnapshot implements cairn.Snapshotter. The snapshot is kept with the
// session, so Delete, Sweep and expiry drop it with the session.
func (s *Store) PutSnapshot(ctx context.Context, id string, snap cairn.Snapshot) error {
	if err := s.guard.Snapshot(id, snap, 0); err != nil {
		return err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	ss := s.live(id)
	if ss == nil {
		return cairn.ErrNotFound
	}
	if ss.snap == nil || ss.snap.Seq <= snap.Seq {
		ss.snap = &cairn.Snapshot{Seq: snap.Seq, Data: bytes.Clone(snap.Data)}
	}
	return nil
}

// LoadSnapshot implements cairn.Snapshotter.
func (s *Store) LoadSnapshot(ctx context.Context, id string) (*cairn.Snapshot, error) {
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	ss := s.live(id)
	if ss == nil {
		return nil, cairn.ErrNotFound
	}
	if ss.snap == nil {
		return nil, nil
	}
	return &cairn.Snapshot{Seq: ss.snap.Seq, Data: bytes.Clone(ss.snap.Data)}, nil
}

// DropSnapshot implements cairn.Snapshotter.
func (s *Store) DropSnapshot(ctx context.Context, id string) error {
	if err := s.guard.Session(id); err != nil {
		return err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	ss := s.live(id)
	if ss == nil {
		return cairn.ErrNotFound
	}
	ss.snap = nil
	return nil
}
