package crypt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/wire"
)

// Inspection is a session as it is stored, seen with the key.
type Inspection struct {
	Session string
	Events  int     // events stored
	Sealed  int     // events sealed under the session's data key
	Clear   []int64 // seqs of the events that are not sealed (memory.reset aside, which never is)
}

// Damaged reports whether some events of the session are not sealed.
func (i *Inspection) Damaged() bool { return len(i.Clear) > 0 }

// RepairOptions configure Repair.
type RepairOptions struct {
	// Cut drops the events from the first one in clear to the end instead
	// of sealing them; the session keeps its sealed history before them.
	// The whole history stays in the Backup session.
	Cut bool
	// Backup is the ID of the session that receives the whole history,
	// every event sealed, before the session is rewritten. Empty: the
	// session's ID and "-before-repair", or a new ID when that is too
	// long. Repair deletes it at the end unless Cut is set.
	Backup string
}

// RepairResult says what Repair did.
type RepairResult struct {
	Session  string `json:"session"`
	Resealed int    `json:"resealed"` // events in clear that are sealed now
	Cut      int    `json:"cut"`      // events dropped from the session (kept in Backup)
	Events   int    `json:"events"`   // events the session holds now
	Backup   string `json:"backup"`   // the session that keeps the whole history; "" once deleted
}

// Inspect reads a session as it is stored and opens its sealed events; it
// refuses one that does not authenticate or whose key the keyring lacks.
func (s *store) Inspect(ctx context.Context, id string) (*Inspection, error) {
	ins, _, _, err := s.inspect(ctx, id)
	return ins, err
}

// inspect returns the inspection, every event opened (or as stored, when
// in clear) and the session's info.
func (s *store) inspect(ctx context.Context, id string) (*Inspection, []cairn.Event, cairn.SessionInfo, error) {
	if s.ring == nil {
		return nil, nil, cairn.SessionInfo{}, fmt.Errorf("inspect %s: no keyring", id)
	}
	rec, err := s.inner.Load(ctx, id, 0)
	if err != nil {
		return nil, nil, cairn.SessionInfo{}, err
	}
	sk, err := s.dataKey(ctx, id, false)
	if errors.Is(err, errNoKey) {
		sk, err = nil, nil
	}
	if err != nil {
		return nil, nil, rec.Info, fmt.Errorf("inspect %s: %w", id, err)
	}
	ins := &Inspection{Session: id, Events: len(rec.Events)}
	events := make([]cairn.Event, len(rec.Events))
	for i, e := range rec.Events {
		events[i] = e
		if e.Kind == cairn.KindMemoryReset {
			continue
		}
		if _, _, _, ok := tokensOf(e.Kind, e.Data); !ok {
			ins.Clear = append(ins.Clear, e.Seq)
			continue
		}
		if events[i], err = s.openEvent(sk, id, e); err != nil {
			return nil, nil, rec.Info, fmt.Errorf("inspect %s: %w", id, err)
		}
		ins.Sealed++
	}
	return ins, events, rec.Info, nil
}

// Repair rewrites a session whose events are not all sealed so that every
// event it keeps is sealed, under a new data key. First the whole history,
// every event sealed, is written to the backup session and read back;
// then the session is deleted and written again, with the same ID,
// creation time and labels, and read back. A failure before the delete
// leaves the session as it was; a failure after it leaves the whole
// history in the backup, and the error says so. The bytes of the events in
// clear may stay in the backend's free space, as after any Delete (see
// docs/SECURITY.md).
//
// A session to repair is one that holds plaintext. A process without the
// key, or a program that opened the backend directly, may have appended
// events in clear after a session's sealed ones (the core now refuses
// that; see CheckUnsealed). With the key, such a session does not
// load (ErrPlaintext). Inspect says which events are in clear; Repair
// rewrites the session with every event sealed, or cuts the clear ones off
// (RepairOptions.Cut).
//
// Repair refuses a session with nothing in clear, one whose history is
// not valid once opened, and one that changed while it ran. Run it while
// nothing else writes the session.
func (s *store) Repair(ctx context.Context, id string, opts RepairOptions) (*RepairResult, error) {
	if err := s.writable(ctx); err != nil {
		return nil, fmt.Errorf("repair %s: %w", id, err)
	}
	ins, events, info, err := s.inspect(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ins.Damaged() {
		return nil, fmt.Errorf("repair %s: every event is sealed; nothing to repair", id)
	}
	if _, err := cairn.NewMemory(events...); err != nil {
		return nil, fmt.Errorf("repair %s: the history, opened, is not valid: %w", id, err)
	}
	keep := events
	if opts.Cut {
		first := int(ins.Clear[0] - events[0].Seq)
		if first == 0 {
			return nil, fmt.Errorf("repair %s: the first event is in clear; cutting would leave nothing: seal it instead (no Cut)", id)
		}
		keep = events[:first]
	}
	backup := opts.Backup
	if backup == "" {
		backup = id + "-before-repair"
		if cairn.ValidateID(backup) != nil {
			backup = cairn.NewID()
		}
	}
	labels := maps.Clone(info.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels["repair_of"] = id
	if err := s.rewrite(ctx, cairn.SessionMeta{ID: backup, Labels: labels}, events); err != nil {
		return nil, fmt.Errorf("repair %s: write the backup %s: %w", id, backup, err)
	}
	now, err := s.inner.Stat(ctx, id)
	if err != nil || now.LastSeq != info.LastSeq {
		if err == nil {
			err = fmt.Errorf("%w: the session changed while it was repaired (last seq %d, now %d)", cairn.ErrConflict, info.LastSeq, now.LastSeq)
		}
		_ = s.Delete(context.WithoutCancel(ctx), backup)
		return nil, fmt.Errorf("repair %s: %w; nothing was changed", id, err)
	}
	if err := s.Delete(ctx, id); err != nil {
		_ = s.Delete(context.WithoutCancel(ctx), backup)
		return nil, fmt.Errorf("repair %s: %w; nothing was changed", id, err)
	}
	if err := s.rewrite(ctx, cairn.SessionMeta{ID: id, CreatedAt: info.CreatedAt, Labels: info.Labels}, keep); err != nil {
		return nil, fmt.Errorf("repair %s: %w; the whole history is in session %s (fork it back as %s)", id, err, backup, id)
	}
	res := &RepairResult{Session: id, Events: len(keep), Backup: backup}
	if opts.Cut {
		res.Cut = len(events) - len(keep)
		return res, nil
	}
	res.Resealed = len(ins.Clear)
	if err := s.Delete(ctx, backup); err != nil && !errors.Is(err, cairn.ErrNotFound) {
		return res, fmt.Errorf("repair %s: repaired, but the backup %s is left: %w", id, backup, err)
	}
	res.Backup = ""
	return res, nil
}

// rewrite creates a session, appends events to it (sealed) in batches and
// reads it back. If any step fails the new session is deleted again.
func (s *store) rewrite(ctx context.Context, meta cairn.SessionMeta, events []cairn.Event) error {
	if err := s.Create(ctx, meta); err != nil {
		return err
	}
	fail := func(err error) error {
		_ = s.Delete(context.WithoutCancel(ctx), meta.ID)
		return err
	}
	batch := s.limits.MaxAppendEvents
	for i := 0; i < len(events); i += batch {
		end := min(i+batch, len(events))
		if err := s.Append(ctx, meta.ID, int64(i), events[i:end]...); err != nil {
			return fail(err)
		}
	}
	got, err := s.Load(ctx, meta.ID, 0)
	if err != nil {
		return fail(fmt.Errorf("read back: %w", err))
	}
	if len(got.Events) != len(events) {
		return fail(fmt.Errorf("read back %d events, wrote %d", len(got.Events), len(events)))
	}
	for i, e := range events {
		if !bytes.Equal(canonical(got.Events[i].Data), canonical(e.Data)) || got.Events[i].Kind != e.Kind {
			return fail(fmt.Errorf("read back seq %d differs from what was written", e.Seq))
		}
	}
	return nil
}

func canonical(b []byte) []byte {
	c, err := wire.Canonical(b)
	if err != nil {
		return b
	}
	return c
}
