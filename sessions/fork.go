package sessions

import (
	"context"
	"fmt"
	"maps"

	"github.com/cairnhq/cairn"
)

// ForkOptions says where a fork ends and what it is called.
type ForkOptions struct {
	At int64  // the last seq to keep; 0: the whole history
	As string // the new session's ID; empty: a new random ID (cairn.NewID)

	// MaxAppendEvents is the most events written in one append, for a
	// store opened with a lower limit than cairn.DefaultMaxAppendEvents.
	MaxAppendEvents int
}

// Forked says what Fork wrote.
type Forked struct {
	ID     string        `json:"id"`   // the new session
	From   string        `json:"from"` // the session forked
	At     int64         `json:"at"`   // the last seq kept from it
	Events []cairn.Event `json:"-"`    // the new session's events
}

// RangeError says that a fork's seq is outside the session's events.
type RangeError struct {
	At, Last int64
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("seq %d is outside the session's events 1..%d", e.At, e.Last)
}

// Fork copies session id's history up to seq o.At into a new session,
// labelled forked_from=id, that is whole: when the fork ends in the middle
// of a run, its last event says that run was interrupted (ForkEvents), so
// it lists as interrupted, not running, and resumes as any interrupted run
// does. It returns a *RangeError for a seq outside the history, and the
// errors of Write; the source session is only read.
func Fork(ctx context.Context, store cairn.Store, id string, o ForkOptions) (*Forked, error) {
	if o.As == "" {
		o.As = cairn.NewID()
	}
	if err := cairn.ValidateID(o.As); err != nil {
		return nil, err
	}
	rec, err := store.Load(ctx, id, 0)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	events, err := ForkEvents(rec.Events, o.At)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	labels := maps.Clone(rec.Info.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels["forked_from"] = id
	if err := write(ctx, store, cairn.SessionMeta{ID: o.As, Labels: labels}, events, o.MaxAppendEvents); err != nil {
		return nil, err
	}
	at := o.At
	if at == 0 {
		at = int64(len(rec.Events))
	}
	return &Forked{ID: o.As, From: id, At: at, Events: events}, nil
}

// ForkEvents returns the events of a fork of a history at seq at (0: its
// last): the events up to at, then, when the run they end in has not
// ended (its state is running), a run.interrupted{forked} that lists the
// calls still pending. Nothing runs a fork until someone resumes it, and a
// resume takes it from there by the rules every interrupted run follows.
// events must be a whole history from seq 1.
func ForkEvents(events []cairn.Event, at int64) ([]cairn.Event, error) {
	last := int64(len(events))
	if at == 0 {
		at = last
	}
	if at < 1 || at > last {
		return nil, &RangeError{At: at, Last: last}
	}
	kept := events[:at:at]
	st, err := cairn.Fold(kept)
	if err != nil {
		return nil, err
	}
	if st.Status != cairn.StatusRunning {
		return kept, nil
	}
	pending := make([]cairn.ToolCall, 0, len(st.Pending))
	for _, p := range st.Pending {
		pending = append(pending, p.ToolCall)
	}
	e := cairn.MustEvent(cairn.KindRunInterrupted, st.Run, cairn.RunInterrupted{Reason: cairn.InterruptForked, Pending: pending})
	e.Seq = at + 1
	return append(kept, e), nil
}
