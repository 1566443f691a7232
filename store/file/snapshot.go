//go:build linux || darwin

package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

var _ cairn.Snapshotter = (*Store)(nil)

// snapshotName is the session's snapshot file, once one was put.
const snapshotName = "snapshot"

// snapshotFormat names the form of the snapshot file.
const snapshotFormat = "cairn.file.snapshot"

// snapshotHeader is the first line of the snapshot file, as JSON; the
// snapshot's bytes follow it, as they were given, Size of them, whose
// CRC-32C (Castagnoli) is CRC.
type snapshotHeader struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Session string `json:"session"`
	Seq     int64  `json:"seq"`
	Size    int    `json:"size"`
	CRC     uint32 `json:"crc32c"`
}

// errBadSnapshot marks a snapshot file the store cannot read. LoadSnapshot
// returns it (cairn.Restore then folds the events), and the next
// PutSnapshot replaces the file.
var errBadSnapshot = errors.New("damaged snapshot file")

// encodeSnapshot returns the snapshot file of session id.
func encodeSnapshot(id string, snap cairn.Snapshot) ([]byte, error) {
	h, err := json.Marshal(snapshotHeader{Format: snapshotFormat, Version: 1, Session: id, Seq: snap.Seq,
		Size: len(snap.Data), CRC: crc32.Checksum(snap.Data, castagnoli)})
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(h)+1+len(snap.Data))
	out = append(out, h...)
	out = append(out, '\n')
	return append(out, snap.Data...), nil
}

// parseSnapshot decodes and checks the snapshot file of session id.
func parseSnapshot(b []byte, id string) (cairn.Snapshot, error) {
	line, data, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return cairn.Snapshot{}, errors.New("no header line")
	}
	var h snapshotHeader
	if err := json.Unmarshal(line, &h); err != nil {
		return cairn.Snapshot{}, fmt.Errorf("header: %w", err)
	}
	switch {
	case h.Format != snapshotFormat || h.Version != 1:
		return cairn.Snapshot{}, fmt.Errorf("not a snapshot in format %s version 1", snapshotFormat)
	case h.Session != id:
		return cairn.Snapshot{}, fmt.Errorf("the snapshot of session %q, not %q", h.Session, id)
	case h.Seq < 1:
		return cairn.Snapshot{}, fmt.Errorf("seq %d", h.Seq)
	case h.Size != len(data):
		return cairn.Snapshot{}, fmt.Errorf("%d bytes of data where the header says %d", len(data), h.Size)
	case crc32.Checksum(data, castagnoli) != h.CRC:
		return cairn.Snapshot{}, errors.New("the data fails its checksum")
	}
	return cairn.Snapshot{Seq: h.Seq, Data: data}, nil
}

// PutSnapshot implements cairn.Snapshotter. The snapshot file is replaced
// atomically and durably (a temporary file beside it, fsynced, renamed
// over it, the folder fsynced) under the session's exclusive lock, which
// also makes the check of the seq held and the replacement one step
// between every process that shares the folder. The session's other
// files are not written: its updated time and expiry stay as they are. A
// deleted session's folder is gone, and nothing creates it again.
func (s *Store) PutSnapshot(ctx context.Context, id string, snap cairn.Snapshot) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.ops.RUnlock()
	if err := driver.CheckSnapshot(id, snap, 0); err != nil {
		return err
	}
	data, err := encodeSnapshot(id, snap)
	if err != nil {
		return fmt.Errorf("put snapshot %s: %w", id, err)
	}
	err = s.withSession(ctx, id, true, func(*session, time.Time) error {
		if cur, err := s.readSnapshot(id); err == nil && cur != nil && cur.Seq > snap.Seq {
			return nil // a later snapshot is there; a damaged one is replaced
		}
		return s.writeFile(id+"/"+snapshotName, data, true)
	})
	if err != nil {
		return fmt.Errorf("put snapshot %s: %w", id, err)
	}
	return nil
}

// LoadSnapshot implements cairn.Snapshotter. It reads the snapshot file
// under the session's shared lock. A file that does not read is an error
// wrapping errBadSnapshot that names it.
func (s *Store) LoadSnapshot(ctx context.Context, id string) (*cairn.Snapshot, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.ops.RUnlock()
	if err := cairn.ValidateID(id); err != nil {
		return nil, err
	}
	var snap *cairn.Snapshot
	err := s.withSession(ctx, id, false, func(*session, time.Time) error {
		var err error
		snap, err = s.readSnapshot(id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", id, err)
	}
	return snap, nil
}

// DropSnapshot implements cairn.Snapshotter: it removes the snapshot file
// under the session's exclusive lock.
func (s *Store) DropSnapshot(ctx context.Context, id string) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.ops.RUnlock()
	if err := cairn.ValidateID(id); err != nil {
		return err
	}
	err := s.withSession(ctx, id, true, func(*session, time.Time) error {
		err := s.ns.Remove(id + "/" + snapshotName)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return s.syncDir(id)
	})
	if err != nil {
		return fmt.Errorf("drop snapshot %s: %w", id, err)
	}
	return nil
}

// readSnapshot reads the session's snapshot file, with its lock held: nil
// when it has none.
func (s *Store) readSnapshot(id string) (*cairn.Snapshot, error) {
	b, err := s.ns.ReadFile(id + "/" + snapshotName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	snap, err := parseSnapshot(b, id)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", errBadSnapshot, filepath.Join(s.root.Name(), s.opts.Namespace, id, snapshotName), err)
	}
	return &snap, nil
}
