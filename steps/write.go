package steps

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/eventcmp"
	"github.com/cairnhq/cairn/internal/telemetry"
	"github.com/cairnhq/cairn/store/crypt"
)

// errChanged marks a write refused because the session changed since it
// was read (cairn.ErrConflict): the call reads what the store holds and
// tries again, as a replay of what the other writer recorded.
var errChanged = errors.New("the session changed since it was read")

// ready is what every call that may record does first, with s.mu held:
// refuse a closed or busy session, and read what the store holds when the
// last write's outcome is unknown or the session changed under it.
func (s *Session) ready(ctx context.Context) error {
	switch {
	case s.closed:
		return ErrClosed
	case s.busy != nil:
		return fmt.Errorf("session %s: step %q is running: %w", s.id, s.busy.name, ErrBusy)
	case s.unsure:
		return s.reload(ctx)
	}
	return nil
}

// record appends events as the loop's next records, in one atomic append:
// a run.started first when the session has no run yet, and the variable
// changes c after the events, as a state.set. The cursor is at the end of
// the history (the loop is not replaying). With s.mu held.
func (s *Session) record(ctx context.Context, c change, events ...cairn.Event) error {
	var batch []cairn.Event
	run := s.state.Run
	if run == "" {
		run = cairn.NewID()
		batch = append(batch, cairn.MustEvent(cairn.KindRunStarted, run, cairn.RunStarted{RunID: run, Agent: s.opts.Name}))
	}
	for _, e := range events {
		e.Run = run
		batch = append(batch, e)
	}
	if e, ok := c.event(run); ok {
		batch = append(batch, e)
	}
	return s.write(ctx, batch)
}

// write numbers events, appends them in one atomic append (fenced with the
// lease when the session holds one) and moves the cursor over them. Each
// event is decoded once, by Prepare: the store, the memory and the state
// take the data it decoded. On a conflict or an outage the session is
// marked unsure: the next call reads the store first. With s.mu held.
func (s *Session) write(ctx context.Context, events []cairn.Event) error {
	batch, err := s.mem.Prepare(events...)
	if err != nil {
		return fmt.Errorf("append to session %s: %w", s.id, err)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	wctx, span := s.tel.StartAppend(wctx)
	if s.lease != nil {
		err = s.lease.append(wctx, s.mem.LastSeq(), batch...)
	} else {
		err = s.store.Append(wctx, s.id, s.mem.LastSeq(), batch...)
	}
	if span.IsRecording() {
		kinds := make([]string, len(batch))
		for i, e := range batch {
			kinds[i] = string(e.Kind)
		}
		telemetry.EndAppend(span, telemetry.Backend(s.store), s.id, s.mem.LastSeq()+1, s.mem.LastSeq()+int64(len(batch)), kinds, err)
	} else {
		span.End()
	}
	switch {
	case err == nil:
	case errors.Is(err, cairn.ErrConflict):
		s.unsure = true
		return fmt.Errorf("session %s: %w: %w", s.id, errChanged, err)
	case cairn.IsUnavailable(err):
		// The store may have applied the write before the reply was
		// lost: read it before the next write, and know its starts as
		// steps this process did not run.
		s.unsure, s.uncertain = true, batch
		return fmt.Errorf("append to session %s (the write may or may not be stored; the session reads the store again at its next call): %w", s.id, err)
	default:
		return fmt.Errorf("append to session %s: %w", s.id, err)
	}
	if _, err := s.mem.Add(batch...); err != nil {
		return fmt.Errorf("append to session %s: %w", s.id, err)
	}
	for _, e := range batch {
		if err := s.apply(e); err != nil {
			return err
		}
	}
	s.uncertain, s.open = nil, nil
	return nil
}

// reload reads the events the store holds after the memory's last one,
// written by another process or by a write of this one whose reply was
// lost, and adds them ahead of the cursor: the loop replays them. A start
// found in the write whose outcome was unknown is a step this process
// never ran (it heard the write fail). With s.mu held.
func (s *Session) reload(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	rec, err := s.store.Load(rctx, s.id, s.mem.LastSeq()+1)
	if err != nil {
		return fmt.Errorf("session %s: read what the store holds after a write that failed: %w", s.id, err)
	}
	if err := crypt.CheckUnsealed(s.id, rec.Events); err != nil {
		return err
	}
	if len(rec.Events) > 0 {
		mem, err := s.mem.Rebuilt(append(s.mem.Events(), rec.Events...)...)
		if err != nil {
			return fmt.Errorf("session %s: %w", s.id, err)
		}
		s.mem = mem
		if u := s.uncertain; len(u) > 0 && len(rec.Events) >= len(u) && eventcmp.Same(rec.Events[:len(u)], u) {
			for _, e := range u {
				if isStart(e) {
					s.notRun[e.Seq] = true
				}
			}
			s.uncertain = nil
		}
	}
	s.unsure = false
	return nil
}

// isStart reports whether e is the start of a step or of a tool call.
func isStart(e cairn.Event) bool {
	r, ok, err := position(e)
	return err == nil && ok && (r.kind == recStarted || r.kind == recToolStarted)
}
