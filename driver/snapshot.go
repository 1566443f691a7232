package driver

import (
	"fmt"

	"github.com/cairnhq/cairn"
)

// MaxSnapshotBytes is the largest snapshot CheckSnapshot lets a store
// keep when the store gives no smaller limit of its own: far below what
// every backend holds in one value (Redis 512 MB, PostgreSQL 1 GB,
// SQLite 1 GB), and far above the state of any session whose memory is
// compacted. A store that cannot take that much (MongoDB, 16 MiB a
// document) passes its own limit.
const MaxSnapshotBytes = 256 << 20

// Snapshot checks a cairn.Snapshotter's PutSnapshot call: an open store,
// then CheckSnapshot.
func (g *Guard) Snapshot(id string, snap cairn.Snapshot, limit int) error {
	if err := g.Check(); err != nil {
		return err
	}
	return CheckSnapshot(id, snap, limit)
}

// CheckSnapshot validates a PutSnapshot call before a store writes
// anything: a valid ID, a seq of 1 or more (a snapshot follows at least
// one event), some data, and no more data than limit bytes (0 or less:
// MaxSnapshotBytes). A bad snapshot is an error wrapping
// cairn.ErrSnapshotInvalid, one too large wraps cairn.ErrTooLarge. Every
// backend calls it first, so all of them refuse the same snapshots with
// the same errors.
func CheckSnapshot(id string, snap cairn.Snapshot, limit int) error {
	if err := cairn.ValidateID(id); err != nil {
		return err
	}
	if limit <= 0 {
		limit = MaxSnapshotBytes
	}
	switch {
	case snap.Seq < 1:
		return fmt.Errorf("put snapshot %s: %w: seq %d, want 1 or more", id, cairn.ErrSnapshotInvalid, snap.Seq)
	case len(snap.Data) == 0:
		return fmt.Errorf("put snapshot %s: %w: no data", id, cairn.ErrSnapshotInvalid)
	case len(snap.Data) > limit:
		return fmt.Errorf("put snapshot %s: %w: %d bytes, the store's limit is %d", id, cairn.ErrTooLarge, len(snap.Data), limit)
	}
	return nil
}
