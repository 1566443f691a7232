package eino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cloudwego/eino/compose"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/crypt"
)

// TypeCheckpoint is the custom event type (cairn.Custom.Type) of a
// checkpoint: its payload is a CheckpointRecord.
const TypeCheckpoint = "eino.checkpoint"

// LabelCheckpoint is the label (value "true") given to the sessions a
// CheckPointStore creates, so that `cairn sessions list --label` finds them.
const LabelCheckpoint = "eino.checkpoint"

// maxTries bounds the appends of one Set when other writers append to the
// same session at once; each try after a conflict waits a little longer,
// at random, so that racing writers spread out.
const maxTries = 50

// CheckpointRecord is the payload of a TypeCheckpoint event: the bytes
// Eino gave Set, as Eino serialized them.
type CheckpointRecord struct {
	Data []byte `json:"data"` // base64 in the JSON form
}

// Checkpoint is one checkpoint in a session's history (CheckPointStore.History).
type Checkpoint struct {
	Seq  int64     // the seq of its event in the session
	At   time.Time // when it was written
	Data []byte    // the checkpoint, as Eino serialized it
}

// CheckPointStore is an Eino compose.CheckPointStore on a cairn store: the
// checkpoint ID names a cairn session, each Set appends the checkpoint to
// that session as a custom event (TypeCheckpoint) and Get returns the
// latest one. The earlier checkpoints stay in the history (History, Fork),
// and the store brings what it brings to every session: TTL, Delete,
// encryption with store/crypt, export and `cairn sessions show`.
//
// A checkpoint ID must be a valid cairn session ID (1-128 characters of
// A-Z a-z 0-9 _ -), with the store's Prefix before it. Keep the
// checkpoints in sessions of their own, apart from the sessions a Recorder
// writes: give the two different IDs.
type CheckPointStore struct {
	store  cairn.Store
	prefix string
}

var _ compose.CheckPointStore = (*CheckPointStore)(nil)

// NewCheckPointStore returns a CheckPointStore that keeps checkpoint id in
// the session prefix+id of store. Open store with cairn.Open (importing
// github.com/cairnhq/cairn/store/all for every URL scheme), and through
// store/crypt to encrypt the checkpoints.
func NewCheckPointStore(store cairn.Store, prefix string) *CheckPointStore {
	return &CheckPointStore{store: store, prefix: prefix}
}

// SessionID returns the ID of the session that holds checkpoint id, or an
// error when it is not a valid session ID.
func (c *CheckPointStore) SessionID(id string) (string, error) {
	sid := c.prefix + id
	if err := cairn.ValidateID(sid); err != nil {
		return "", fmt.Errorf("eino checkpoint %q: session ID %q: %w", id, sid, err)
	}
	return sid, nil
}

// Get returns the latest checkpoint of id, and false when the store holds
// none (no session, or a session without a checkpoint).
func (c *CheckPointStore) Get(ctx context.Context, id string) ([]byte, bool, error) {
	sid, err := c.SessionID(id)
	if err != nil {
		return nil, false, err
	}
	info, err := c.store.Stat(ctx, sid)
	if errors.Is(err, cairn.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("eino checkpoint %q: %w", id, err)
	}
	if info.LastSeq == 0 {
		return nil, false, nil
	}
	// The last event is the checkpoint, unless something else was
	// appended after it: then read the whole history.
	for _, from := range []int64{info.LastSeq, 0} {
		events, err := c.load(ctx, id, sid, from)
		if errors.Is(err, cairn.ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		for i := len(events) - 1; i >= 0; i-- {
			cp, ok, err := decodeCheckpoint(events[i])
			if err != nil {
				return nil, false, fmt.Errorf("eino checkpoint %q: session %s: %w", id, sid, err)
			}
			if ok {
				return cp.Data, true, nil
			}
		}
	}
	return nil, false, nil
}

func (c *CheckPointStore) load(ctx context.Context, id, sid string, from int64) ([]cairn.Event, error) {
	rec, err := c.store.Load(ctx, sid, from)
	if err != nil {
		return nil, fmt.Errorf("eino checkpoint %q: %w", id, err)
	}
	if err := crypt.CheckUnsealed(sid, rec.Events); err != nil {
		return nil, fmt.Errorf("eino checkpoint %q: %w", id, err)
	}
	return rec.Events, nil
}

// Set appends checkpoint to the history of id, creating its session when
// the store has none. The append is atomic: a reader sees the previous
// checkpoint or this one, whole.
func (c *CheckPointStore) Set(ctx context.Context, id string, checkpoint []byte) error {
	sid, err := c.SessionID(id)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(CheckpointRecord{Data: checkpoint})
	if err != nil {
		return fmt.Errorf("eino checkpoint %q: %w", id, err)
	}
	e, err := cairn.NewEvent(cairn.KindCustom, "", cairn.Custom{Type: TypeCheckpoint, Payload: payload})
	if err != nil {
		return fmt.Errorf("eino checkpoint %q: %w", id, err)
	}
	labels := map[string]string{LabelCheckpoint: "true"}
	if err := appendEvents(ctx, c.store, sid, labels, e); err != nil {
		return fmt.Errorf("eino checkpoint %q: %w", id, err)
	}
	return nil
}

// appendEvents appends events to session sid after its last event,
// creating it (with labels) when the store lacks it, and tries again when
// another writer appended first.
func appendEvents(ctx context.Context, store cairn.Store, sid string, labels map[string]string, events ...cairn.Event) error {
	for tries := 1; ; tries++ {
		info, err := store.Stat(ctx, sid)
		if errors.Is(err, cairn.ErrNotFound) {
			err = store.Create(ctx, cairn.SessionMeta{ID: sid, Labels: labels})
			if err != nil && !errors.Is(err, cairn.ErrExists) {
				return fmt.Errorf("create session %s: %w", sid, err)
			}
			info, err = store.Stat(ctx, sid)
		}
		if err != nil {
			return fmt.Errorf("session %s: %w", sid, err)
		}
		batch := make([]cairn.Event, len(events))
		for i, e := range events {
			e.Seq = info.LastSeq + int64(i) + 1
			batch[i] = e
		}
		err = store.Append(ctx, sid, info.LastSeq, batch...)
		if errors.Is(err, cairn.ErrConflict) && tries < maxTries {
			select {
			case <-ctx.Done():
				return fmt.Errorf("append to session %s: %w", sid, ctx.Err())
			case <-time.After(time.Duration(rand.Int64N(int64(tries) * int64(time.Millisecond)))):
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("append to session %s: %w", sid, err)
		}
		return nil
	}
}

func decodeCheckpoint(e cairn.Event) (*CheckpointRecord, bool, error) {
	if e.Kind != cairn.KindCustom {
		return nil, false, nil
	}
	v, err := e.Decode()
	if err != nil {
		return nil, false, fmt.Errorf("seq %d: %w", e.Seq, err)
	}
	cu := v.(*cairn.Custom)
	if cu.Type != TypeCheckpoint {
		return nil, false, nil
	}
	var r CheckpointRecord
	if err := json.Unmarshal(cu.Payload, &r); err != nil {
		return nil, false, fmt.Errorf("seq %d: the checkpoint does not decode: %w", e.Seq, err)
	}
	return &r, true, nil
}

// History returns every checkpoint of id, oldest first: Eino's progress
// at each of its saves. It returns an error wrapping cairn.ErrNotFound
// when the store has no session for id.
func (c *CheckPointStore) History(ctx context.Context, id string) ([]Checkpoint, error) {
	sid, err := c.SessionID(id)
	if err != nil {
		return nil, err
	}
	events, err := c.load(ctx, id, sid, 0)
	if err != nil {
		return nil, err
	}
	var out []Checkpoint
	for _, e := range events {
		cp, ok, err := decodeCheckpoint(e)
		if err != nil {
			return nil, fmt.Errorf("eino checkpoint %q: session %s: %w", id, sid, err)
		}
		if ok {
			out = append(out, Checkpoint{Seq: e.Seq, At: e.At, Data: cp.Data})
		}
	}
	return out, nil
}

// Fork writes the checkpoint of id recorded at seq (a Seq of History) as
// the latest checkpoint of newID: time travel. A graph run with
// compose.WithCheckPointID(newID) then goes on from that point, and the
// history of id stays as it was. Eino's own fork, reading one checkpoint
// and writing another (compose.WithWriteToCheckPointID), needs nothing of
// this: the new ID gets a session of its own at its first Set.
func (c *CheckPointStore) Fork(ctx context.Context, id string, seq int64, newID string) error {
	h, err := c.History(ctx, id)
	if err != nil {
		return err
	}
	for _, cp := range h {
		if cp.Seq == seq {
			return c.Set(ctx, newID, cp.Data)
		}
	}
	return fmt.Errorf("eino checkpoint %q: no checkpoint at seq %d (History lists them)", id, seq)
}

// Delete erases checkpoint id and its whole history. It returns an error
// wrapping cairn.ErrNotFound when there is nothing to delete.
func (c *CheckPointStore) Delete(ctx context.Context, id string) error {
	sid, err := c.SessionID(id)
	if err != nil {
		return err
	}
	if err := c.store.Delete(ctx, sid); err != nil {
		return fmt.Errorf("eino checkpoint %q: delete session %s: %w", id, sid, err)
	}
	return nil
}
