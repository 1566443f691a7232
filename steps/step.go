package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/telemetry"
)

// maxTries is how many times a call reads the store and tries again when
// another writer changed the session under it.
const maxTries = 3

// Option configures one step.
type Option func(*stepOptions)

type stepOptions struct {
	notIdempotent bool
	retryable     bool
}

// NotIdempotent marks a step whose effect must not happen twice (a
// payment, a message sent, a line appended to a file): its start is
// recorded, and durable in the store, before its function runs. A re-run
// that finds the start without a result does not run the step again: it
// returns an *OutcomeUnknownError and the caller decides.
func NotIdempotent() Option { return func(o *stepOptions) { o.notIdempotent = true } }

// Retryable marks a step whose failure is not final. The failure is
// recorded all the same, marked retry, and the call returns the error; a
// re-run that meets the failure as the last thing the session recorded
// runs the step again (a new attempt at the same position), while a
// re-run that finds later steps recorded after it returns the error again,
// as the first run did. For Tool, a failure of a retryable tool is not
// recorded at all: the call stays pending and runs again on a re-run (not
// with NotIdempotent).
func Retryable() Option { return func(o *stepOptions) { o.retryable = true } }

func options(opts []Option) stepOptions {
	var o stepOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// scope is a step whose function runs: Set with its context changes the
// variables as part of the step.
type scope struct {
	s      *Session
	name   string
	change change
}

type scopeKey struct{}

// Run runs the step name of the loop: fn on the first run, its recorded
// result on a re-run.
//
// On the first run fn runs and its result, encoded as JSON, is appended to
// the session as one event (custom cairn.step) before Run returns, with
// the variables set before the step and inside it (Set with fn's context)
// in the same append. On a re-run, the k-th step the loop asks for returns
// the k-th step recorded in the run, decoded into T, without running fn. A
// name that differs from the one recorded at that point is an error
// wrapping ErrNotDeterministic (a *MismatchError).
//
// Run returns the result as the session recorded it, on the first run too
// (decoded from its JSON), so that a re-run sees the very same value. A
// result that does not encode as JSON, or does not decode back into T, is
// an error and is not recorded.
//
// An error of fn is recorded as {code, message} and returned again, as a
// *StepError with the same text, on a re-run (see Retryable); a
// *StepError returned by fn chooses the code. An error while ctx is done
// is not recorded: the step runs again on a re-run. A panic in fn is
// recovered as an error.
//
// With NotIdempotent, the step's start (custom cairn.step.started) is
// recorded first; a start without a result makes Run return an
// *OutcomeUnknownError (errors.Is ErrOutcomeUnknown) without running fn.
func Run[T any](ctx context.Context, s *Session, name string, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	var zero T
	if fn == nil {
		return zero, fmt.Errorf("session %s: step %q has no function", s.id, name)
	}
	raw, err := s.runStep(ctx, name, func(ctx context.Context) ([]byte, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return encode(v)
	}, options(opts))
	if err != nil {
		return zero, err
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		return zero, fmt.Errorf("session %s, step %q: the recorded result %s does not decode into %T: %w", s.id, name, clip(raw), out, err)
	}
	return out, nil
}

// encode returns v as JSON, checking that it decodes back into its type.
func encode[T any](v T) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, &notRecorded{fmt.Errorf("the step's result does not encode as JSON, so it was not recorded: %w", err)}
	}
	var back T
	if err := json.Unmarshal(raw, &back); err != nil {
		return nil, &notRecorded{fmt.Errorf("the step's result %s does not decode back into %T, so it was not recorded: %w", clip(raw), back, err)}
	}
	return raw, nil
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

func (s *Session) runStep(ctx context.Context, name string, fn func(context.Context) ([]byte, error), o stepOptions) (json.RawMessage, error) {
	if name == "" {
		return nil, fmt.Errorf("session %s: a step needs a name", s.id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for tries := 1; ; tries++ {
		if err := s.ready(ctx); err != nil {
			return nil, err
		}
		raw, again, err := s.step1(ctx, name, fn, o)
		if again && tries < maxTries {
			continue
		}
		return raw, err
	}
}

// step1 is one try of runStep: the replay of the step's records, or its
// run. again reports that the session changed under it before anything
// that must not be repeated ran: read the store and try again.
func (s *Session) step1(ctx context.Context, name string, fn func(context.Context) ([]byte, error), o stepOptions) (json.RawMessage, bool, error) {
	k := s.step + 1
	var haveStart int64
replay:
	for {
		r, err := s.next()
		if err != nil {
			return nil, false, err
		}
		if r == nil {
			break // the end of the history: run the step
		}
		if (r.kind != recStep && r.kind != recStarted) || r.step.Name != name || r.step.Step != k {
			return nil, false, s.mismatch(k, fmt.Sprintf("step %q", name), r)
		}
		if err := s.pass(r); err != nil {
			return nil, false, err
		}
		s.step = k
		nr, err := s.next()
		if err != nil {
			return nil, false, err
		}
		sameStep := nr != nil && (nr.kind == recStep || nr.kind == recStarted) && nr.step.Name == name && nr.step.Step == k
		switch {
		case r.kind == recStarted && sameStep:
			continue // its result, or the next attempt
		case r.kind == recStarted && nr == nil && s.notRun[r.e.Seq]:
			// This process recorded the start, heard the write fail and
			// did not run the step: run it now, under that start.
			haveStart = r.e.Seq
			break replay
		case r.kind == recStarted:
			s.open = &started{name: name, step: k, seq: r.e.Seq}
			return nil, false, &OutcomeUnknownError{Session: s.id, Name: name, Step: k, Seq: r.e.Seq}
		case r.step.Error != nil && r.step.Retry && sameStep:
			continue // a later attempt follows the failure
		case r.step.Error != nil && r.step.Retry && nr == nil:
			break replay // the failure is the last thing recorded: run again
		case r.step.Error != nil:
			e := *r.step.Error
			return nil, false, &e
		}
		return r.step.Result, false, nil
	}
	if s.finished() {
		return nil, false, fmt.Errorf("session %s, step %q: %w", s.id, name, ErrFinished)
	}
	var start func() cairn.Event
	if o.notIdempotent {
		start = func() cairn.Event { return customEvent(TypeStarted, Record{Name: name, Step: k}) }
	}
	run := func(ctx context.Context) (out []byte, err error) {
		ctx, span := s.tel.StartStep(ctx, s.id, name, k)
		defer func() { telemetry.EndStep(span, err) }() // a panic, too, ends it
		return fn(ctx)
	}
	return s.execute(ctx, attempt{
		name: name, k: k, start: start, haveStart: haveStart, run: run,
		result: func(out []byte, err error, d time.Duration) (cairn.Event, bool) {
			r := Record{Name: name, Step: k, Result: out, DurationMS: d.Milliseconds()}
			if err != nil {
				r.Result, r.Error, r.Retry = nil, errorInfo(err), o.retryable
			}
			return customEvent(TypeStep, r), true
		},
	})
}

// attempt is one run of a step: its start, when it is not idempotent, its
// function and its result's event.
type attempt struct {
	name      string
	callID    string // a tool step's call
	k         int
	start     func() cairn.Event // nil: idempotent
	haveStart int64              // the seq of a start already recorded for this attempt, 0: none
	run       func(context.Context) ([]byte, error)
	// result returns the event that records the step's outcome (err nil:
	// out), or false when a failure is not recorded.
	result func(out []byte, err error, d time.Duration) (cairn.Event, bool)
}

// execute runs a step at the end of the history: it records the start (of
// a step that is not idempotent), runs the function with s.mu released,
// and records the outcome with the variables set before and in it. It
// returns the step's output. again reports that the session changed under
// the step before anything that must not be repeated ran. With s.mu held.
func (s *Session) execute(ctx context.Context, a attempt) (out []byte, again bool, err error) {
	if err := s.checkLease(); err != nil {
		return nil, false, fmt.Errorf("session %s, step %q was not run: %w", s.id, a.name, err)
	}
	startSeq := a.haveStart
	open := func() { s.open = &started{name: a.name, callID: a.callID, step: a.k, seq: startSeq} }
	if a.start != nil && startSeq == 0 {
		batch, err := s.recordSeqs(ctx, s.pend.clone(), a.start())
		if err != nil {
			return nil, errors.Is(err, errChanged), fmt.Errorf("session %s: record the start of step %q (the step did not run): %w", s.id, a.name, err)
		}
		s.pend, s.step, startSeq = change{}, a.k, batch
		if err := s.checkLease(); err != nil {
			// Recorded as started, and not run: this process knows so.
			s.notRun[startSeq] = true
			open()
			return nil, false, fmt.Errorf("session %s, step %q was not run: %w", s.id, a.name, err)
		}
	}
	sc := &scope{s: s, name: a.name}
	s.busy = sc
	s.mu.Unlock()
	begin := time.Now()
	out, err = call(context.WithValue(ctx, scopeKey{}, sc), a.run)
	d := time.Since(begin)
	s.mu.Lock()
	s.busy = nil
	delete(s.notRun, startSeq)

	c := s.pend.clone()
	if err == nil {
		c.merge(sc.change) // a failed step changes no variable
	}
	_, unrecorded := errors.AsType[*notRecorded](err)
	if err != nil && (unrecorded || ctx.Err() != nil) {
		if startSeq != 0 {
			open()
		}
		return nil, false, err
	}
	e, ok := a.result(out, err, d)
	if !ok {
		return nil, false, err
	}
	if werr := s.record(ctx, c, e); werr != nil {
		if startSeq != 0 {
			// The step ran under its recorded start: never run it again.
			open()
			return nil, false, fmt.Errorf("session %s: step %q ran and its outcome could not be recorded (a re-run reports it as unknown): %w", s.id, a.name, stripChanged(werr))
		}
		return nil, errors.Is(werr, errChanged), errors.Join(err, fmt.Errorf("session %s: record step %q: %w", s.id, a.name, werr))
	}
	s.pend, s.step = change{}, a.k
	return out, false, err
}

// stripChanged keeps err's text and what it wraps but errChanged, so that
// a write after a step that must not run twice is never tried again.
func stripChanged(err error) error {
	if !errors.Is(err, errChanged) {
		return err
	}
	return &changedErr{err}
}

type changedErr struct{ err error }

func (e *changedErr) Error() string { return e.err.Error() }
func (e *changedErr) Unwrap() error { return cairn.ErrConflict }

// call runs fn, turning a panic into an error.
func call(ctx context.Context, fn func(context.Context) ([]byte, error)) (out []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the step panicked: %v\n%s", v, debug.Stack())
		}
	}()
	return fn(ctx)
}

// recordSeqs is record that returns the seq of the first of events.
func (s *Session) recordSeqs(ctx context.Context, c change, events ...cairn.Event) (int64, error) {
	if err := s.record(ctx, c, events...); err != nil {
		return 0, err
	}
	seq := s.pos - int64(len(events)) + 1
	if !c.empty() {
		seq-- // the state.set after them
	}
	return seq, nil
}

func customEvent(typ string, r Record) cairn.Event {
	payload, err := json.Marshal(r)
	if err != nil {
		panic(err) // a Record always encodes: its Result is valid JSON
	}
	return cairn.MustEvent(cairn.KindCustom, "", cairn.Custom{Type: typ, Payload: payload})
}

func (c change) clone() change {
	var out change
	out.merge(c)
	return out
}

// Resolve records result as the outcome of the step name, whose start the
// loop just met without a result (the *OutcomeUnknownError that Run or
// Tool returned): the caller found out what happened. A re-run returns it
// as the step's result. A tool step's result is its output, a string.
func (s *Session) Resolve(ctx context.Context, name string, result any) error {
	return s.resolve(ctx, name, result, nil)
}

// ResolveError records err as the outcome of the step name, as Resolve
// records a result: a re-run returns it as a *StepError. Given the
// *OutcomeUnknownError itself, it records the decision to leave the
// outcome unknown (code CodeOutcomeUnknown; errors.Is ErrOutcomeUnknown).
func (s *Session) ResolveError(ctx context.Context, name string, err error) error {
	if err == nil {
		return fmt.Errorf("session %s: resolve %q: no error given", s.id, name)
	}
	return s.resolve(ctx, name, nil, err)
}

func (s *Session) resolve(ctx context.Context, name string, result any, failure error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return err
	}
	o := s.open
	if o == nil || o.name != name {
		return fmt.Errorf("session %s: resolve %q: the loop has not just met that step without a result (Resolve follows the step's *OutcomeUnknownError)", s.id, name)
	}
	r, err := s.next()
	if err != nil {
		return err
	}
	if r != nil {
		return fmt.Errorf("session %s: resolve step %d %q: the session recorded %s after its start (seq %d): the loop went on without resolving it", s.id, o.step, name, r.describe(), r.e.Seq)
	}
	var e cairn.Event
	if o.callID != "" {
		tr := cairn.ToolResult{CallID: o.callID, Name: name}
		if failure != nil {
			tr.Output, tr.IsError = failure.Error(), true
		} else if out, ok := result.(string); ok {
			tr.Output = out
		} else {
			return fmt.Errorf("session %s: resolve tool %q call %s: the result of a tool is its output, a string, not %T", s.id, name, o.callID, result)
		}
		e = cairn.MustEvent(cairn.KindToolResult, "", tr)
	} else {
		rec := Record{Name: name, Step: o.step, Resolved: true}
		if failure != nil {
			rec.Error = errorInfo(failure)
		} else if rec.Result, err = json.Marshal(result); err != nil {
			return fmt.Errorf("session %s: resolve %q: the result does not encode as JSON: %w", s.id, name, err)
		}
		e = customEvent(TypeStep, rec)
	}
	if err := s.record(ctx, s.pend.clone(), e); err != nil {
		return fmt.Errorf("session %s: resolve %q: %w", s.id, name, stripChanged(err))
	}
	s.pend, s.open = change{}, nil
	delete(s.notRun, o.seq)
	return nil
}
