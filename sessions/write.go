package sessions

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn"
)

// Write creates session meta.ID in store and appends events to it, in as
// few appends as the store's limits allow (cairn.DefaultMaxAppendEvents
// each). The events' seqs must run from 1. If an append fails, the new
// session is deleted again, so a failed Write leaves the store as it was.
// It returns the store's error from Create as it is (cairn.ErrExists,
// cairn.ErrInvalidID) and an append's wrapped.
func Write(ctx context.Context, store cairn.Store, meta cairn.SessionMeta, events []cairn.Event) error {
	return write(ctx, store, meta, events, 0)
}

// write is Write with at most batch events an append (0: the default).
func write(ctx context.Context, store cairn.Store, meta cairn.SessionMeta, events []cairn.Event, batch int) error {
	if err := store.Create(ctx, meta); err != nil {
		return err
	}
	if err := appendFrom(ctx, store, meta.ID, events, 0, batch); err != nil {
		_ = store.Delete(context.WithoutCancel(ctx), meta.ID)
		return fmt.Errorf("write %s (nothing kept): %w", meta.ID, err)
	}
	return nil
}
