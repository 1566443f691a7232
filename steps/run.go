package steps

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/text"
)

// User records a user message (message.user) as a step of the loop: the
// history a model sees gets it, and `cairn sessions list` shows a
// session's first one. On a re-run the recorded message must have the same
// text (else a *MismatchError): read input that a re-run cannot read again
// (a terminal, a queue) inside a step, with Run, and pass User its result.
func (s *Session) User(ctx context.Context, text string) error {
	e := cairn.MustEvent(cairn.KindMessageUser, "", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: text}}})
	return s.message(ctx, recUser, "a user message", text, e)
}

// System records a system message (message.system), as User records a
// user message: instructions for a model, in the history it sees.
func (s *Session) System(ctx context.Context, text string) error {
	e := cairn.MustEvent(cairn.KindMessageSystem, "", cairn.MessageSystem{Text: text})
	return s.message(ctx, recSystem, "a system message", text, e)
}

func (s *Session) message(ctx context.Context, kind recKind, what, msg string, e cairn.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	asked := fmt.Sprintf("%s %q", what, text.Truncate(msg, 60))
	return s.retry(ctx, func() (bool, error) {
		k := s.step + 1
		r, err := s.next()
		if err != nil {
			return false, err
		}
		if r != nil {
			if r.kind != kind || r.text != msg {
				return false, s.mismatch(k, asked, r)
			}
			if err := s.pass(r); err != nil {
				return false, err
			}
			s.step = k
			return false, nil
		}
		if s.finished() {
			return false, fmt.Errorf("session %s, %s: %w", s.id, asked, ErrFinished)
		}
		if err := s.record(ctx, s.pend.clone(), e); err != nil {
			return isChanged(err), err
		}
		s.pend, s.step = change{}, k
		return false, nil
	})
}

// retry runs try, with s.mu held, until it succeeds, fails for good, or the
// session changed under it maxTries times.
func (s *Session) retry(ctx context.Context, try func() (again bool, err error)) error {
	for tries := 1; ; tries++ {
		if err := s.ready(ctx); err != nil {
			return err
		}
		again, err := try()
		if again && tries < maxTries {
			continue
		}
		return err
	}
}

// Finish ends the loop's run as completed with output (run.finished):
// `cairn sessions list` shows the session completed. The variables set
// since the last step are recorded with it. On a re-run it meets the
// recorded end and returns nil. Steps asked for after it return
// ErrFinished; Begin starts the next run.
func (s *Session) Finish(ctx context.Context, output string) error {
	return s.end(ctx, cairn.RunFinished{Status: cairn.StatusCompleted, Output: output})
}

// Fail ends the loop's run as failed with err, recorded as {code,
// message} (a *StepError chooses the code), as Finish ends it completed.
func (s *Session) Fail(ctx context.Context, err error) error {
	if err == nil {
		return fmt.Errorf("session %s: fail the run: no error given", s.id)
	}
	info := errorInfo(err)
	return s.end(ctx, cairn.RunFinished{Status: cairn.StatusFailed, Error: &cairn.ErrorInfo{Code: info.Code, Message: info.Message}})
}

func (s *Session) end(ctx context.Context, f cairn.RunFinished) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	asked := fmt.Sprintf("the end of the run (%s)", f.Status)
	return s.retry(ctx, func() (bool, error) {
		k := s.step + 1
		r, err := s.next()
		if err != nil {
			return false, err
		}
		if r != nil {
			if r.kind != recFinished || r.finished.Status != f.Status {
				return false, &MismatchError{Session: s.id, Step: k, Asked: asked, Recorded: r.describe() + recordedStatus(r), Seq: r.e.Seq}
			}
			return false, s.pass(r)
		}
		if s.finished() {
			return false, fmt.Errorf("session %s, %s: %w", s.id, asked, ErrFinished)
		}
		if err := s.record(ctx, s.pend.clone(), cairn.MustEvent(cairn.KindRunFinished, "", f)); err != nil {
			return isChanged(err), err
		}
		s.pend = change{}
		return false, nil
	})
}

func recordedStatus(r *rec) string {
	if r.kind == recFinished {
		return fmt.Sprintf(" (%s)", r.finished.Status)
	}
	return ""
}

// Begin starts a new run of the session (run.started), keeping its
// history and variables: the next turn of a conversation, after the last
// run finished. The loop's position moves to the end of the history; the
// steps of the new run count from 1. A session's first run begins by
// itself with its first step. Begin refuses while the session's last run
// has not finished: resume it (open the session and run the loop, which
// replays its steps), then Finish or Fail it.
func (s *Session) Begin(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retry(ctx, func() (bool, error) {
		last, err := s.last()
		if err != nil {
			return false, err
		}
		if last.Run != "" && !finishedStatus(last.Status) {
			return false, fmt.Errorf("session %s: begin a run: run %s has not finished (status %s); run the loop to its end (its recorded steps replay) and Finish or Fail it first", s.id, last.Run, last.Status)
		}
		for s.pos < s.mem.LastSeq() {
			if err := s.apply(s.event(s.pos + 1)); err != nil {
				return false, err
			}
		}
		run := cairn.NewID()
		batch := []cairn.Event{cairn.MustEvent(cairn.KindRunStarted, run, cairn.RunStarted{RunID: run, Agent: s.opts.Name})}
		if e, ok := s.pend.event(run); ok {
			batch = append(batch, e)
		}
		if err := s.write(ctx, batch); err != nil {
			return isChanged(err), err
		}
		s.pend, s.step = change{}, 0
		return false, nil
	})
}

// Finished reports whether the session's last run has finished (Finish or
// Fail, in this process or an earlier one), whether or not the loop has
// replayed it to its end: a loop that starts a new turn calls Begin then.
func (s *Session) Finished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, err := s.last()
	return err == nil && last.Run != "" && finishedStatus(last.Status)
}

// last returns the state at the end of the history. With s.mu held.
func (s *Session) last() (*cairn.State, error) {
	st := s.state
	if s.pos < s.mem.LastSeq() {
		st = st.Clone()
		for seq := s.pos + 1; seq <= s.mem.LastSeq(); seq++ {
			if err := st.Apply(s.event(seq)); err != nil {
				return nil, fmt.Errorf("session %s: %w", s.id, err)
			}
		}
	}
	return st, nil
}

func finishedStatus(st cairn.Status) bool {
	return st == cairn.StatusCompleted || st == cairn.StatusFailed || st == cairn.StatusMaxSteps
}

// isChanged reports a write refused because another writer changed the
// session: the call may read the store and try again.
func isChanged(err error) bool { return errors.Is(err, errChanged) }
