package crypt

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// snapshotter carries cairn.Snapshotter for a store over an inner store
// that has it: a snapshot's data is sealed with the session's data key,
// as its events are, and bound to the namespace, the session and the
// snapshot's seq (snapshotAAD). What the inner store holds is a token
// (sealToken) as bytes.
type snapshotter struct {
	s  *store
	sn cairn.Snapshotter
}

// snapshotAAD is the additional data bound into a sealed snapshot: a
// snapshot moved to another namespace, session or seq does not open.
func snapshotAAD(ns, id string, seq int64) []byte {
	return []byte("cairn snapshot v1\x00" + ns + "\x00" + id + "\x00" + strconv.FormatInt(seq, 10))
}

// PutSnapshot implements cairn.Snapshotter: it seals the snapshot's data
// and puts the sealed snapshot in the inner store. A guard (no keyring)
// puts it as it is, unless the session's events are sealed. A store
// whose key is not one of the namespace's refuses it, as Append.
func (p snapshotter) PutSnapshot(ctx context.Context, id string, snap cairn.Snapshot) error {
	s := p.s
	if id == markerID {
		return fmt.Errorf("put snapshot %s: %w: the ID is reserved for the marker of an encrypted namespace", id, cairn.ErrInvalidID)
	}
	if err := driver.CheckSnapshot(id, snap, 0); err != nil {
		return err
	}
	if s.ring == nil {
		if err := s.guardNamespace(ctx); err != nil {
			return fmt.Errorf("put snapshot %s: %w", id, err)
		}
		if err := s.guardSnapshot(ctx, id, snap.Seq); err != nil {
			return fmt.Errorf("put snapshot %s: %w", id, err)
		}
		return p.sn.PutSnapshot(ctx, id, snap)
	}
	if err := s.writable(ctx); err != nil {
		return fmt.Errorf("put snapshot %s: %w", id, err)
	}
	sk, err := s.dataKey(ctx, id, true)
	if err != nil {
		return fmt.Errorf("put snapshot %s: %w", id, err)
	}
	sealed, err := seal(sk.dek, snap.Data, snapshotAAD(s.ns, id, snap.Seq))
	if err != nil {
		return fmt.Errorf("put snapshot %s: seal: %w", id, err)
	}
	err = p.sn.PutSnapshot(ctx, id, cairn.Snapshot{Seq: snap.Seq, Data: []byte(makeToken(sk.id, sealed))})
	if errors.Is(err, cairn.ErrNotFound) {
		// No such session: drop a key that this call may have made.
		s.forget(id)
		if _, lerr := s.inner.Stat(ctx, id); errors.Is(lerr, cairn.ErrNotFound) {
			_ = s.keys.Delete(ctx, id)
		}
	}
	return err
}

// guardSnapshot refuses, for a guard, a snapshot of a session whose events
// are sealed: it reads the session's events from the snapshot's seq on, or
// its last event when the snapshot is past them, unless the guard has
// found the session unsealed before.
func (s *store) guardSnapshot(ctx context.Context, id string, seq int64) error {
	s.mu.Lock()
	done := s.checked[id]
	s.mu.Unlock()
	if done {
		return nil
	}
	rec, err := s.inner.Load(ctx, id, seq)
	if err == nil && len(rec.Events) == 0 && rec.Info.LastSeq > 0 {
		rec, err = s.inner.Load(ctx, id, rec.Info.LastSeq)
	}
	if errors.Is(err, cairn.ErrNotFound) {
		return nil // the put says so
	}
	if err != nil {
		return err
	}
	if err := CheckUnsealed(id, rec.Events); err != nil {
		return err
	}
	s.markChecked(id)
	return nil
}

// LoadSnapshot implements cairn.Snapshotter: it opens the sealed snapshot
// of the inner store. A snapshot that does not open (not sealed, sealed
// under a key the session no longer has, changed, or moved from another
// session or seq) is an error that wraps cairn.ErrSnapshotInvalid and
// says why: cairn.Restore then folds the events instead. A guard (no
// keyring) returns a snapshot that is not sealed as it is, and refuses a
// sealed one with an error wrapping cairn.ErrSealed.
func (p snapshotter) LoadSnapshot(ctx context.Context, id string) (*cairn.Snapshot, error) {
	s := p.s
	if err := s.guardNamespace(ctx); err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", id, err)
	}
	snap, err := p.sn.LoadSnapshot(ctx, id)
	if err != nil || snap == nil {
		return snap, err
	}
	dkid, sealed, ok := parseToken(string(snap.Data))
	if s.ring == nil {
		if ok {
			return nil, fmt.Errorf("load snapshot %s: %w: the snapshot at seq %d is sealed by data key %s: open the store with its key (store/crypt)",
				id, cairn.ErrSealed, snap.Seq, dkid)
		}
		return snap, nil
	}
	bad := func(format string, args ...any) (*cairn.Snapshot, error) {
		return nil, fmt.Errorf("load snapshot %s: %w: %w", id, cairn.ErrSnapshotInvalid, fmt.Errorf(format, args...))
	}
	if !ok {
		return bad("%w: the snapshot at seq %d is not encrypted; refusing it", ErrPlaintext, snap.Seq)
	}
	for retry := true; ; retry = false {
		sk, err := s.dataKey(ctx, id, false)
		switch {
		case errors.Is(err, errNoKey):
			return bad("%w", noKey(id))
		case err != nil:
			return nil, fmt.Errorf("load snapshot %s: %w", id, err)
		case sk.id != dkid && retry:
			s.forget(id) // the session was made again since: read its key again
			continue
		case sk.id != dkid:
			return bad("%w: the snapshot at seq %d is sealed by data key %s, the session's is %s", ErrTampered, snap.Seq, dkid, sk.id)
		}
		plain, err := open(sk.dek, sealed, snapshotAAD(s.ns, id, snap.Seq))
		if err != nil {
			return bad("%w: the snapshot at seq %d does not decrypt: changed, or moved from another session or seq", ErrTampered, snap.Seq)
		}
		return &cairn.Snapshot{Seq: snap.Seq, Data: plain}, nil
	}
}

// DropSnapshot implements cairn.Snapshotter.
func (p snapshotter) DropSnapshot(ctx context.Context, id string) error {
	if err := p.s.guardNamespace(ctx); err != nil {
		return fmt.Errorf("drop snapshot %s: %w", id, err)
	}
	return p.sn.DropSnapshot(ctx, id)
}
