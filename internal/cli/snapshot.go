package cli

import (
	"context"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
)

// SnapshotPolicy is when a session a command writes whole (copy, fork,
// import) gets a snapshot (see agent.WriteSnapshot): the [persistence]
// settings snapshot_events and snapshot_bytes, as the agent has them.
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

// WriteSnapshot is agent.WriteSnapshot with policy p.
func WriteSnapshot(ctx context.Context, store cairn.Store, id string, events []cairn.Event, p SnapshotPolicy) (bool, error) {
	return agent.WriteSnapshot(ctx, store, id, events, p.Events, p.Bytes)
}

// NoteSnapshot writes a session's snapshot as WriteSnapshot does, and
// tells of a failure in a note.
func (a *App) NoteSnapshot(ctx context.Context, store cairn.Store, id string, events []cairn.Event) {
	if _, err := WriteSnapshot(ctx, store, id, events, a.SnapshotPolicy()); err != nil {
		a.Notef("note: %v; the session is whole, and opening it replays its events until the agent writes a snapshot", err)
	}
}
