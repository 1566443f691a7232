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
	return s.withLive(id, func(ss *session) error {
		if ss.snap == nil || ss.snap.Seq <= snap.Seq {
			ss.snap = &cairn.Snapshot{Seq: snap.Seq, Data: bytes.Clone(snap.Data)}
		}
		return nil
	})
}

// LoadSnapshot implements cairn.Snapshotter.
func (s *Store) LoadSnapshot(ctx context.Context, id string) (*cairn.Snapshot, error) {
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	var snap *cairn.Snapshot
	err := s.withLive(id, func(ss *session) error {
		if ss.snap != nil {
			snap = &cairn.Snapshot{Seq: ss.snap.Seq, Data: bytes.Clone(ss.snap.Data)}
		}
		return nil
	})
	return snap, err
}

// DropSnapshot implements cairn.Snapshotter.
func (s *Store) DropSnapshot(ctx context.Context, id string) error {
	if err := s.guard.Session(id); err != nil {
		return err
	}
	return s.withLive(id, func(ss *session) error {
		ss.snap = nil
		return nil
	})
}
