package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/sessions"
)

// WriteSession writes a whole session as sessions.Write does, with the
// command's hints on a failure.
func WriteSession(ctx context.Context, store cairn.Store, meta cairn.SessionMeta, events []cairn.Event) error {
	return WriteFailed(meta.ID, sessions.Write(ctx, store, meta, events))
}

// WriteFailed gives an error of a whole-session write (sessions.Write,
// sessions.Fork) of session id the hint that says what to try; nil stays
// nil.
func WriteFailed(id string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cairn.ErrExists):
		return Fail(fmt.Errorf("create %s: %w", id, err), "choose another ID with --as, or delete the existing session first")
	case errors.Is(err, cairn.ErrInvalidID):
		return Fail(fmt.Errorf("create: %w", err), "session IDs are 1-128 characters of A-Z a-z 0-9 _ -")
	}
	return Fail(err, "nothing was kept; check the input and the store")
}
