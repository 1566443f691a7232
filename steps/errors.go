package steps

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrOutcomeUnknown is wrapped by the error of a step marked
	// NotIdempotent whose start was recorded and whose result was not: the
	// process stopped after the start was stored, before or while the
	// step ran, so its effect may or may not have happened. The step is
	// not run again. The error is an *OutcomeUnknownError when the loop
	// meets the step (decide with Session.Resolve or Session.ResolveError,
	// or go on), and a *StepError of code CodeOutcomeUnknown when that
	// decision was recorded with ResolveError.
	ErrOutcomeUnknown = errors.New("outcome unknown: the step's start was recorded and its result was not, so it may have run; it is not run again")

	// ErrNotDeterministic is wrapped by a *MismatchError: at this point of
	// the run the loop asks for a step other than the one the session
	// recorded there.
	ErrNotDeterministic = errors.New("the loop is not deterministic")

	// ErrFinished is returned for a step asked for after the session's
	// run has finished (Finish or Fail, now or in an earlier process).
	// Begin starts the next run.
	ErrFinished = errors.New("the session's run has finished; call Begin to start another")

	// ErrBusy is returned for a step asked for while another step of the
	// same session runs: steps of one session run one at a time, in the
	// order the loop asks for them, so that a re-run asks for them in the
	// same order. A step's function that asks for a step is refused too:
	// steps do not nest.
	ErrBusy = errors.New("another step of the session is running: steps run one at a time and do not nest")

	// ErrLeaseExpired is wrapped by the error of a step asked for when the
	// session's lease (Options.Claim) could not be renewed in time: the
	// holder stops acting before another process can hold the session,
	// and the step did not run.
	ErrLeaseExpired = errors.New("the session's lease could not be renewed in time")

	// ErrClosed is returned by a Session used after Close.
	ErrClosed = errors.New("the session is closed")
)

// CodeOutcomeUnknown is the code of an unknown outcome recorded as the
// step's error (ResolveError with an *OutcomeUnknownError).
const CodeOutcomeUnknown = "outcome_unknown"

// CodeError is the code recorded for an error that says nothing of its own
// code: any error but a *StepError.
const CodeError = "error"

// OutcomeUnknownError names a step whose start was recorded and whose
// result was not (see ErrOutcomeUnknown). The step did not run now. The
// caller decides: record what it found out with Session.Resolve or
// Session.ResolveError, or go on; the next re-run meets the same step
// again as long as nothing is recorded for it.
type OutcomeUnknownError struct {
	Session string
	Name    string // the step's name; a tool step's tool name
	CallID  string // a tool step's call ID; "" for other steps
	Step    int    // the step's position in the run, from 1
	Seq     int64  // the seq of its recorded start
}

// Error names the step and where its start is recorded.
func (e *OutcomeUnknownError) Error() string {
	what := fmt.Sprintf("step %d %q", e.Step, e.Name)
	if e.CallID != "" {
		what = fmt.Sprintf("step %d, tool %q call %s", e.Step, e.Name, e.CallID)
	}
	return fmt.Sprintf("session %s, %s (started at seq %d): %v", e.Session, what, e.Seq, ErrOutcomeUnknown)
}

// Unwrap returns ErrOutcomeUnknown.
func (e *OutcomeUnknownError) Unwrap() error { return ErrOutcomeUnknown }

// StepError is a step's error as the session records it: a code and a
// message, the {code, message} JSON of the step's record. A re-run returns
// the recorded error as a *StepError, whose text is the original error's;
// the original error's type and wrapped errors are not recorded (match
// the code). A step's function may return a *StepError to choose the code.
type StepError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error returns the message: the text of the error the step returned.
func (e *StepError) Error() string { return e.Message }

// Is reports an unknown outcome recorded as the step's error as
// ErrOutcomeUnknown.
func (e *StepError) Is(target error) bool {
	return target == ErrOutcomeUnknown && e.Code == CodeOutcomeUnknown
}

// errorInfo is err as a step records it.
func errorInfo(err error) *StepError {
	var se *StepError
	switch {
	case errors.As(err, &se) && se.Code != "":
		return &StepError{Code: se.Code, Message: err.Error()}
	case errors.Is(err, ErrOutcomeUnknown):
		return &StepError{Code: CodeOutcomeUnknown, Message: err.Error()}
	}
	return &StepError{Code: CodeError, Message: err.Error()}
}

// MismatchError says that the loop asked, at a point of its run, for
// another step than the one the session recorded there: the loop does not
// ask for the same steps in the same order on a re-run (it branches on the
// clock, on randomness, on something read outside a step). Nothing was run
// or recorded. It wraps ErrNotDeterministic.
type MismatchError struct {
	Session  string
	Step     int    // the position in the run, from 1
	Asked    string // what the loop asks for, in words: `step "charge"`, "a model call", …
	Recorded string // what the session recorded there, in words
	Seq      int64  // the seq of the recorded event
}

// Error names the position, what was asked for and what was recorded.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("session %s, step %d: the loop asks for %s where the session recorded %s (seq %d): %v; a loop must ask for the same steps in the same order on a re-run",
		e.Session, e.Step, e.Asked, e.Recorded, e.Seq, ErrNotDeterministic)
}

// Unwrap returns ErrNotDeterministic.
func (e *MismatchError) Unwrap() error { return ErrNotDeterministic }

// notRecorded marks an error of a step's function that is not recorded as
// the step's result: the result did not encode, or the context ended.
type notRecorded struct{ err error }

func (e *notRecorded) Error() string { return e.err.Error() }
func (e *notRecorded) Unwrap() error { return e.err }
