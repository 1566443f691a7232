package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
)

// CopyOutcome says what CopySession did.
type CopyOutcome string

// Outcomes of CopySession.
const (
	Copied  CopyOutcome = "copied"  // the whole session was written
	Resumed CopyOutcome = "resumed" // an earlier, interrupted copy was completed
	Skipped CopyOutcome = "skipped" // the destination already held an equal session
)

// CopySession copies one session from src to dst and verifies that the copy
// folds to the same snapshot. A destination that holds a prefix of the
// source's history (an interrupted copy) is completed; one that holds a
// different history is an error, and nothing is overwritten. A copy written
// or completed gets a snapshot at its last event as policy says (see
// WriteSnapshot); snap, if not nil, is told of a failure to write one,
// which leaves the copy whole.
func CopySession(ctx context.Context, src, dst cairn.Store, id string, policy SnapshotPolicy, snap func(error)) (CopyOutcome, error) {
	rec, err := src.Load(ctx, id, 0)
	if err != nil {
		return "", fmt.Errorf("read %s from the source: %w", id, err)
	}
	outcome := Copied
	have, err := dst.Load(ctx, id, 0)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		if err := WriteSession(ctx, dst, cairn.SessionMeta{ID: id, CreatedAt: rec.Info.CreatedAt, Labels: rec.Info.Labels}, rec.Events); err != nil {
			return "", err
		}
	case err != nil:
		return "", fmt.Errorf("read %s from the destination: %w", id, err)
	default:
		n := len(have.Events)
		if n > len(rec.Events) || !samePrefix(have.Events, rec.Events[:n]) {
			return "", fmt.Errorf("copy %s: the destination holds a different history (%d events); delete it there first to replace it", id, n)
		}
		if n == len(rec.Events) {
			outcome = Skipped
		} else {
			outcome = Resumed
			for i := n; i < len(rec.Events); i += cairn.DefaultMaxAppendEvents {
				end := min(i+cairn.DefaultMaxAppendEvents, len(rec.Events))
				if err := dst.Append(ctx, id, int64(i), rec.Events[i:end]...); err != nil {
					return "", fmt.Errorf("copy %s: append from seq %d: %w", id, i+1, err)
				}
			}
		}
	}
	got, err := verifyCopy(ctx, dst, id, rec.Events)
	if err != nil {
		return "", err
	}
	if outcome != Skipped {
		if _, err := WriteSnapshot(ctx, dst, id, got, policy); err != nil && snap != nil {
			snap(err)
		}
	}
	return outcome, nil
}

func samePrefix(a, b []cairn.Event) bool {
	for i := range a {
		if a[i].Seq != b[i].Seq || a[i].Kind != b[i].Kind || !bytes.Equal(canon(a[i].Data), canon(b[i].Data)) {
			return false
		}
	}
	return true
}

func canon(raw []byte) []byte {
	c, err := cairn.Canonical(raw)
	if err != nil {
		return raw
	}
	return c
}

// verifyCopy checks that the copy of session id in dst folds to the same
// state as want, and returns its events.
func verifyCopy(ctx context.Context, dst cairn.Store, id string, want []cairn.Event) ([]cairn.Event, error) {
	got, err := dst.Load(ctx, id, 0)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", id, err)
	}
	a, err := snapshot(want)
	if err != nil {
		return nil, fmt.Errorf("verify %s: source: %w", id, err)
	}
	b, err := snapshot(got.Events)
	if err != nil {
		return nil, fmt.Errorf("verify %s: copy: %w", id, err)
	}
	if !bytes.Equal(a, b) {
		return nil, fmt.Errorf("verify %s: the copy's snapshot differs from the source's", id)
	}
	return got.Events, nil
}

func snapshot(events []cairn.Event) ([]byte, error) {
	st, err := cairn.Fold(events)
	if err != nil {
		return nil, err
	}
	return st.Snapshot()
}
