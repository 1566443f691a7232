package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
)

// WriteSession creates a session and appends events to it, in as few
// appends as the store's limits allow. If any append fails the new session
// is deleted again, so a failed write leaves the store as it was.
func WriteSession(ctx context.Context, store cairn.Store, meta cairn.SessionMeta, events []cairn.Event) error {
	if err := store.Create(ctx, meta); err != nil {
		if errors.Is(err, cairn.ErrExists) {
			return Fail(fmt.Errorf("create %s: %w", meta.ID, err), "choose another ID with --as, or delete the existing session first")
		}
		if errors.Is(err, cairn.ErrInvalidID) {
			return Fail(fmt.Errorf("create: %w", err), "session IDs are 1-128 characters of A-Z a-z 0-9 _ -")
		}
		return Fail(fmt.Errorf("create %s: %w", meta.ID, err), "`cairn doctor` checks the store")
	}
	const batch = cairn.DefaultMaxAppendEvents
	for i := 0; i < len(events); i += batch {
		end := min(i+batch, len(events))
		if err := store.Append(ctx, meta.ID, int64(i), events[i:end]...); err != nil {
			_ = store.Delete(context.WithoutCancel(ctx), meta.ID)
			return Fail(fmt.Errorf("write %s: %w", meta.ID, err), "nothing was kept; check the input and the store")
		}
	}
	return nil
}
