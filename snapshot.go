package cairn

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/cairnhq/cairn/internal/wire"
)

// snapshotFormat names a snapshot's encoding in its "format" field.
const snapshotFormat = "cairn.snapshot"

// snapshotDoc is the encoded form of a snapshot: the canonical state, the
// seq of the last event folded into it, a checksum of the state's bytes
// and a digest of the event at that seq, which ties the snapshot to one
// history: a session deleted and created again, or a history rewritten
// by an import, has another event there.
type snapshotDoc struct {
	Format  string         `json:"format"`
	Version int            `json:"version"`
	Seq     int64          `json:"seq"`
	Event   string         `json:"event"` // eventDigest of the event at Seq
	Sum     string         `json:"sum"`   // sha256 of State's bytes, hex
	State   jsontext.Value `json:"state"`
}

// Encode encodes the state as a session's snapshot for a Snapshotter: last
// is the last event folded into it (s.LastSeq must be its seq).
func (state *State) Encode(last Event) (Snapshot, error) {
	if state.LastSeq == 0 || last.Seq != state.LastSeq {
		return Snapshot{}, fmt.Errorf("encode snapshot: the state ends at seq %d, the event given is seq %d", state.LastSeq, last.Seq)
	}
	// Not canonical: the state need only decode to itself, and the
	// checksum covers the bytes written.
	raw, err := jsonv2.Marshal(state, jsonv2.FormatNilSliceAsNull(true), jsonv2.FormatNilMapAsNull(true))
	if err != nil {
		return Snapshot{}, fmt.Errorf("encode snapshot: %w", err)
	}
	digest, err := eventDigest(last)
	if err != nil {
		return Snapshot{}, fmt.Errorf("encode snapshot: %w", err)
	}
	sum := sha256.Sum256(raw)
	data, err := jsonv2.Marshal(snapshotDoc{
		Format: snapshotFormat, Version: FormatVersion, Seq: last.Seq,
		Event: digest, Sum: hex.EncodeToString(sum[:]), State: raw,
	})
	if err != nil {
		return Snapshot{}, fmt.Errorf("encode snapshot: %w", err)
	}
	return Snapshot{Seq: last.Seq, Data: data}, nil
}

// decodeSnapshot decodes and checks a snapshot against at, the session's
// stored event at the snapshot's seq. It returns the state, or an error
// wrapping ErrSnapshotInvalid that says what does not match.
func decodeSnapshot(snap Snapshot, at Event) (*State, error) {
	bad := func(format string, args ...any) (*State, error) {
		return nil, fmt.Errorf("%w: %s", ErrSnapshotInvalid, fmt.Sprintf(format, args...))
	}
	var doc snapshotDoc
	if err := jsonv2.Unmarshal(snap.Data, &doc); err != nil {
		return bad("damaged: %v", err)
	}
	switch {
	case doc.Format != snapshotFormat:
		return bad("format %q, not %q", doc.Format, snapshotFormat)
	case doc.Version != FormatVersion:
		return bad("version %d, this cairn reads %d", doc.Version, FormatVersion)
	case doc.Seq != snap.Seq:
		return bad("damaged: it says seq %d, the store filed it at seq %d", doc.Seq, snap.Seq)
	case at.Seq != doc.Seq:
		return bad("stale: it ends at seq %d, the event given is seq %d", doc.Seq, at.Seq)
	}
	sum := sha256.Sum256(doc.State)
	if hex.EncodeToString(sum[:]) != doc.Sum {
		return bad("damaged: the state's checksum does not match")
	}
	digest, err := eventDigest(at)
	if err != nil {
		return bad("the event at seq %d: %v", at.Seq, err)
	}
	if digest != doc.Event {
		return bad("stale: the session's event at seq %d is not the one it was taken after", at.Seq)
	}
	var st State
	if err := jsonv2.Unmarshal(doc.State, &st, jsonv2.RejectUnknownMembers(true)); err != nil {
		return bad("damaged state: %v", err)
	}
	if st.LastSeq != doc.Seq {
		return bad("damaged: the state ends at seq %d, the snapshot at %d", st.LastSeq, doc.Seq)
	}
	if st.Variables == nil {
		st.Variables = map[string]json.RawMessage{}
	}
	if st.Approvals == nil {
		st.Approvals = map[string]ApprovalDecided{}
	}
	return &st, nil
}

// eventDigest returns a hex sha256 of an event's envelope: version, seq,
// time, kind, run and canonical data. Equal events have equal digests
// whatever store they were read from.
func eventDigest(e Event) (string, error) {
	data, err := wire.Canonical(e.Data)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	var n [8]byte
	for _, v := range []int64{int64(e.V), e.Seq, e.At.UnixNano()} {
		binary.BigEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
	for _, s := range []string{string(e.Kind), e.Run, string(data)} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Restored is a session rebuilt from a store by Restore.
type Restored struct {
	// Info is the session's info; Events are the events after Base, in
	// seq order: every event when no snapshot was used.
	Record
	// State is folded through the session's last event.
	State *State
	// Base is the seq of the snapshot the state started from, 0 when
	// every event was folded.
	Base int64
	// BaseState is the snapshot's state, folded through Base; nil when
	// Base is 0. It is not State: State goes on through the events.
	BaseState *State
	// BaseSize is the size in bytes of the snapshot's data; 0 when Base
	// is 0. A writer of snapshots waits for that many bytes of events
	// before it writes the next, whichever process wrote this one.
	BaseSize int
	// Ignored says why the store's snapshot was not used (it wraps
	// ErrSnapshotInvalid, or is the store's error reading it); nil when
	// a snapshot was used or the session had none.
	Ignored error
}

// Memory returns the memory of the restored session: its events after the
// snapshot the state started from (Base), or every event.
func (r *Restored) Memory() (*Memory, error) {
	m, err := newMemoryAfter(r.BaseState, r.Events...)
	if err != nil {
		return nil, err
	}
	m.Session = &SessionMeta{ID: r.Info.ID, CreatedAt: r.Info.CreatedAt, Labels: r.Info.Labels}
	return m, nil
}

// Restore rebuilds a session from st: from its snapshot and the events
// after it when st is a Snapshotter holding a snapshot that matches the
// events, and by folding every event otherwise. A snapshot that is
// stale, damaged or unreadable is never trusted: Restore folds every
// event and says why in Ignored. It returns ErrNotFound for a missing,
// deleted or expired session.
func Restore(ctx context.Context, st Store, id string) (*Restored, error) {
	var ignored error
	if sn, ok := st.(Snapshotter); ok {
		snap, err := sn.LoadSnapshot(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, err
		case err != nil:
			if ctx.Err() != nil {
				return nil, err
			}
			ignored = fmt.Errorf("read snapshot: %w", err)
		case snap != nil:
			r, err := restoreFrom(ctx, st, id, *snap)
			if err == nil || !errors.Is(err, ErrSnapshotInvalid) {
				return r, err
			}
			ignored = err
		}
	}
	rec, err := st.Load(ctx, id, 0)
	if err != nil {
		return nil, err
	}
	state, err := Fold(rec.Events)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	return &Restored{Record: *rec, State: state, Ignored: ignored}, nil
}

func restoreFrom(ctx context.Context, st Store, id string, snap Snapshot) (*Restored, error) {
	if snap.Seq < 1 {
		return nil, fmt.Errorf("%w: damaged: seq %d", ErrSnapshotInvalid, snap.Seq)
	}
	rec, err := st.Load(ctx, id, snap.Seq)
	if err != nil {
		return nil, err
	}
	if len(rec.Events) == 0 || rec.Events[0].Seq != snap.Seq {
		return nil, fmt.Errorf("%w: stale: it ends at seq %d, the session at seq %d", ErrSnapshotInvalid, snap.Seq, rec.Info.LastSeq)
	}
	state, err := decodeSnapshot(snap, rec.Events[0])
	if err != nil {
		return nil, err
	}
	base := state.Clone()
	tail := rec.Events[1:]
	for _, e := range tail {
		if err := state.Apply(e); err != nil {
			return nil, fmt.Errorf("session %s: %w", id, err)
		}
	}
	rec.Events = tail
	return &Restored{Record: *rec, State: state, Base: snap.Seq, BaseState: base, BaseSize: len(snap.Data)}, nil
}
