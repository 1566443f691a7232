package cli

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
)

// SnapshotPolicy is when a session a command writes whole (copy, fork,
// import) gets a snapshot: as the agent's policy (agent.Agent's
// SnapshotEvents and SnapshotBytes; the [persistence] settings), counted
// from the session's first event. 0 is the default; -1 in either means no
// snapshots.
type SnapshotPolicy struct {
	Events, Bytes int
}

// SnapshotPolicy returns the configured policy, or the defaults when the
// configuration cannot be read (the command that needs it has read it).
func (a *App) SnapshotPolicy() SnapshotPolicy {
	cfg, err := a.Config()
	if err != nil {
		return SnapshotPolicy{}
	}
	return SnapshotPolicy{cfg.Persistence.SnapshotEvents, cfg.Persistence.SnapshotBytes}
}

// due reports whether events are enough for a snapshot.
func (p SnapshotPolicy) due(events []cairn.Event) bool {
	if p.Events < 0 || p.Bytes < 0 || len(events) == 0 {
		return false
	}
	n, b := p.Events, p.Bytes
	if n == 0 {
		n = agent.DefaultSnapshotEvents
	}
	if b == 0 {
		b = agent.DefaultSnapshotBytes
	}
	size := 0
	for _, e := range events {
		size += e.Size()
	}
	return len(events) >= n || size >= b
}

// WriteSnapshot gives session id, whose events a command has just written
// whole, the snapshot the agent would have written by then: at its last
// event, when store keeps snapshots and the policy says the events are
// enough. Otherwise the session's next open would replay every event,
// however long it is, until the agent appends enough for one of its own.
// events are the session's as the store holds them, or nil to load them.
// It reports whether it wrote one. A snapshot is derived data: the session
// is whole without it, so a caller reports an error as a note.
func WriteSnapshot(ctx context.Context, store cairn.Store, id string, events []cairn.Event, p SnapshotPolicy) (bool, error) {
	sn, ok := store.(cairn.Snapshotter)
	if !ok || p.Events < 0 || p.Bytes < 0 {
		return false, nil
	}
	if events == nil {
		rec, err := store.Load(ctx, id, 0)
		if err != nil {
			return false, fmt.Errorf("snapshot %s: %w", id, err)
		}
		events = rec.Events
	}
	if !p.due(events) {
		return false, nil
	}
	state, err := cairn.Fold(events)
	if err != nil {
		return false, fmt.Errorf("snapshot %s: %w", id, err)
	}
	snap, err := cairn.EncodeSnapshot(state, events[len(events)-1])
	if err != nil {
		return false, fmt.Errorf("snapshot %s: %w", id, err)
	}
	if err := sn.PutSnapshot(ctx, id, snap); err != nil {
		return false, fmt.Errorf("snapshot %s: %w", id, err)
	}
	return true, nil
}

// NoteSnapshot writes a session's snapshot as WriteSnapshot does, and
// tells of a failure in a note.
func (a *App) NoteSnapshot(ctx context.Context, store cairn.Store, id string, events []cairn.Event) {
	if _, err := WriteSnapshot(ctx, store, id, events, a.SnapshotPolicy()); err != nil {
		a.Notef("note: %v; the session is whole, and opening it replays its events until the agent writes a snapshot", err)
	}
}
