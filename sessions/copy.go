package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
)

// CopyOutcome says what Copy did.
type CopyOutcome string

// Outcomes of Copy.
const (
	Copied  CopyOutcome = "copied"  // the whole session was written
	Resumed CopyOutcome = "resumed" // an earlier, interrupted copy was completed
	Skipped CopyOutcome = "skipped" // the destination already held an equal session
)

// Copy copies session id from src to dst and checks that the copy folds to
// the same snapshot as the source. A destination that holds a prefix of
// the source's history (an interrupted copy) is completed; one that holds
// a different history is an error, and nothing is overwritten. It returns
// the copy's events as dst holds them, for a caller that gives it a
// snapshot.
func Copy(ctx context.Context, src, dst cairn.Store, id string) (CopyOutcome, []cairn.Event, error) {
	rec, err := src.Load(ctx, id, 0)
	if err != nil {
		return "", nil, fmt.Errorf("read %s from the source: %w", id, err)
	}
	outcome := Copied
	have, err := dst.Load(ctx, id, 0)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		if err := Write(ctx, dst, cairn.SessionMeta{ID: id, CreatedAt: rec.Info.CreatedAt, Labels: rec.Info.Labels}, rec.Events); err != nil {
			return "", nil, err
		}
	case err != nil:
		return "", nil, fmt.Errorf("read %s from the destination: %w", id, err)
	default:
		n := len(have.Events)
		if !samePrefix(have.Events, rec.Events) {
			return "", nil, fmt.Errorf("copy %s: the destination holds a different history (%d events); delete it there first to replace it", id, n)
		}
		if n == len(rec.Events) {
			outcome = Skipped
		} else {
			outcome = Resumed
			if err := appendFrom(ctx, dst, id, rec.Events, n, 0); err != nil {
				return "", nil, fmt.Errorf("copy %s: append from seq %d: %w", id, n+1, err)
			}
		}
	}
	got, err := verifyCopy(ctx, dst, id, rec.Events)
	if err != nil {
		return "", nil, err
	}
	return outcome, got, nil
}

// appendFrom appends events[from:] to session id, which holds the first
// from, at most batch (0: cairn.DefaultMaxAppendEvents) in one append. It
// returns the first append's error as it is.
func appendFrom(ctx context.Context, store cairn.Store, id string, events []cairn.Event, from, batch int) error {
	if batch <= 0 {
		batch = cairn.DefaultMaxAppendEvents
	}
	for i := from; i < len(events); i += batch {
		if err := store.Append(ctx, id, int64(i), events[i:min(i+batch, len(events))]...); err != nil {
			return err
		}
	}
	return nil
}

// verifyCopy checks that the copy of session id in dst folds to the same
// state as want, and returns its events.
func verifyCopy(ctx context.Context, dst cairn.Store, id string, want []cairn.Event) ([]cairn.Event, error) {
	got, err := dst.Load(ctx, id, 0)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", id, err)
	}
	a, err := foldSnapshot(want)
	if err != nil {
		return nil, fmt.Errorf("verify %s: source: %w", id, err)
	}
	b, err := foldSnapshot(got.Events)
	if err != nil {
		return nil, fmt.Errorf("verify %s: copy: %w", id, err)
	}
	if !bytes.Equal(a, b) {
		return nil, fmt.Errorf("verify %s: the copy's snapshot differs from the source's", id)
	}
	return got.Events, nil
}

func foldSnapshot(events []cairn.Event) ([]byte, error) {
	st, err := cairn.Fold(events)
	if err != nil {
		return nil, err
	}
	return st.Snapshot()
}
