package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
)

// RunOutput shows a run to people: the model's text as it streams and the
// tools as they run. When stdout is not a terminal it shows nothing while
// the run goes and the caller prints the final answer.
type RunOutput struct {
	app      *App
	live     bool
	streamed bool
	spin     *spinner // "thinking…" until the model's first words; nil when not live
}

// NewRunOutput returns the output for one run.
func (a *App) NewRunOutput() *RunOutput {
	o := &RunOutput{app: a, live: a.Interactive() && !a.Flags.JSON}
	if o.live && IsTerminal(a.Stderr) {
		o.spin = &spinner{w: a.Stderr}
	}
	return o
}

// Options returns the run options that feed this output, and shows
// "thinking…" until the model's first words (and again while it thinks
// after a tool).
func (o *RunOutput) Options() []agent.RunOption {
	if !o.live {
		return nil
	}
	o.spin.start()
	return []agent.RunOption{
		agent.OnText(func(d string) {
			o.spin.stop()
			o.streamed = true
			io.WriteString(o.app.Stdout, d)
		}),
		agent.ObserveTools(func(e agent.ToolEvent) {
			o.spin.stop()
			if !e.Done {
				fmt.Fprintf(o.app.Stderr, "\n  ⚙ %s(%s)\n", e.Call.Name, OneLine(string(e.Call.Args), 60))
			} else if e.IsError {
				fmt.Fprintf(o.app.Stderr, "  ✗ %s: %s\n", e.Call.Name, OneLine(e.Output, 60))
			}
			if e.Done {
				o.spin.start()
			}
		}),
	}
}

// Finish prints the answer of a run if it was not streamed (nor under
// --json, whose object holds it).
func (o *RunOutput) Finish(res *agent.Result) {
	o.spin.stop()
	if res == nil {
		return
	}
	if o.streamed {
		fmt.Fprintln(o.app.Stdout)
		o.streamed = false
		return
	}
	if res.Output != "" && !o.app.Flags.JSON {
		fmt.Fprintln(o.app.Stdout, res.Output)
	}
}

// spinner shows "thinking…" with a turning mark on a terminal while the
// model works, and erases it before anything else is written.
type spinner struct {
	w    io.Writer
	mu   sync.Mutex
	done chan struct{} // closed to stop the one running
	gone chan struct{} // closed when it has erased its line
}

var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (s *spinner) start() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return
	}
	s.done, s.gone = make(chan struct{}), make(chan struct{})
	go func(done, gone chan struct{}) {
		defer close(gone)
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(s.w, "\r\033[K%s thinking…", spinFrames[i%len(spinFrames)])
			select {
			case <-done:
				fmt.Fprint(s.w, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}(s.done, s.gone)
}

func (s *spinner) stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		return
	}
	close(s.done)
	<-s.gone
	s.done, s.gone = nil, nil
}

// RunError turns how a run ended into the command's error, or nil. A run
// that ended with events the store does not hold is ExitUnsaved, whatever
// else happened: those events are lost when the command exits.
func RunError(id string, res *agent.Result, err error) error {
	if res != nil && res.Unsaved > 0 {
		return unsavedError(id, res, err)
	}
	if err != nil {
		var ut *agent.UnknownToolError
		if errors.As(err, &ut) {
			return Fail(err, "resume it with the tools it was run with (tools here: "+strings.Join(ut.Tools, ", ")+
				"), or give the call an error result with `cairn sessions resume "+id+" --deny "+ut.Call.ID+"`")
		}
		if errors.Is(err, agent.ErrLeaseExpired) {
			return Fail(fmt.Errorf("session %s: %w", id, err),
				"the store did not answer in time; the run stopped acting before another process could take it over. `cairn sessions resume "+id+"` finishes it")
		}
		if errors.Is(err, context.Canceled) {
			return Interrupted(fmt.Errorf("interrupted; session %s saved", id),
				"`cairn sessions resume "+id+"` finishes the run with the session's own model (--model chooses another)")
		}
		return Fail(fmt.Errorf("session %s: %w", id, err), "`cairn sessions show "+id+" --transcript` shows what happened")
	}
	switch res.Status {
	case cairn.StatusAwaiting:
		var calls []string
		for _, c := range res.Awaiting {
			calls = append(calls, fmt.Sprintf("%s(%s) [%s]", c.Name, c.Args, c.ID))
		}
		return &Error{Err: fmt.Errorf("session %s is waiting for approval of: %s", id, strings.Join(calls, ", ")),
			Hint: "approve with `cairn sessions resume " + id + " --approve CALL_ID` (or --deny CALL_ID)", Code: ExitAwaiting}
	case cairn.StatusMaxSteps:
		return Fail(fmt.Errorf("session %s stopped after the maximum number of steps", id), "continue it with `cairn sessions resume "+id+"`, or raise agent.max_steps")
	case cairn.StatusFailed:
		msg := "the run failed"
		if res.Error != nil {
			msg = res.Error.Message
		}
		return Fail(fmt.Errorf("session %s: %s", id, msg), "`cairn sessions show "+id+" --transcript` shows what happened")
	}
	return nil
}

// unsavedError is the error of a run that ended with events the store
// does not hold.
func unsavedError(id string, res *agent.Result, err error) error {
	cause := "the store did not answer"
	if res.StoreError != nil {
		cause = res.StoreError.Error()
	}
	msg := fmt.Sprintf("session %s: %d event(s) of this run could not be saved (status %s): %s", id, res.Unsaved, res.Status, cause)
	if err != nil {
		msg += "\nthe run stopped: " + err.Error()
	}
	hint := "once the store answers, `cairn sessions resume " + id + "` goes on from the last saved step; " +
		"no side effect ran without its start saved, so nothing runs twice"
	return &Error{Err: errors.New(msg), Hint: hint, Code: ExitUnsaved}
}

// ReportWarnings prints a run's warnings to stderr.
func (a *App) ReportWarnings(res *agent.Result) {
	if res == nil {
		return
	}
	for _, w := range res.Warnings {
		a.Warnf("%v", w)
	}
}
