// Package builtin holds the demo tools every cairn model can use: calc,
// clock, remember, recall and append_file.
//
//	a := &agent.Agent{Model: offline.New(), Tools: builtin.Tools()}
package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cairnhq/cairn/agent"
)

// Tools returns the five built-in tools: calc, clock, remember, recall and
// append_file.
func Tools() []*agent.Tool {
	return []*agent.Tool{Calc(), Clock(), Remember(), Recall(), AppendFile()}
}

// CalcInput is the arguments of calc.
type CalcInput struct {
	Expression string `json:"expression" jsonschema:"description=an arithmetic expression with + - * / parentheses and decimals, such as 2*(3+4)"`
}

// Calc returns the calc tool: arithmetic with + - * / parentheses and decimals.
func Calc() *agent.Tool {
	return agent.NewTool("calc", "Evaluate an arithmetic expression.", func(_ context.Context, in CalcInput) (string, error) {
		v, err := Eval(in.Expression)
		if err != nil {
			return "", fmt.Errorf("calc %q: %w", in.Expression, err)
		}
		return Format(v), nil
	})
}

// ClockInput is the (empty) arguments of clock.
type ClockInput struct{}

// Clock returns the clock tool: the current time, RFC 3339, UTC.
func Clock() *agent.Tool {
	return agent.NewTool("clock", "The current date and time (RFC 3339, UTC).", func(context.Context, ClockInput) (string, error) {
		return time.Now().UTC().Format(time.RFC3339), nil
	})
}

// RememberInput is the arguments of remember.
type RememberInput struct {
	Key   string          `json:"key" jsonschema:"description=the name to remember the value under"`
	Value json.RawMessage `json:"value" jsonschema:"description=any JSON value"`
}

// Remember returns the remember tool: it sets a session variable, recorded
// as state.set with the call's result.
func Remember() *agent.Tool {
	return agent.NewTool("remember", "Remember a value under a key for the rest of the session.", func(ctx context.Context, in RememberInput) (string, error) {
		if in.Key == "" {
			return "", errors.New(`bad argument "key": is empty`)
		}
		if len(in.Value) == 0 || !json.Valid(in.Value) {
			return "", errors.New(`bad argument "value": is not JSON`)
		}
		if err := agent.SetVar(ctx, in.Key, in.Value); err != nil {
			return "", err
		}
		return fmt.Sprintf("remembered %s = %s", in.Key, compact(in.Value)), nil
	})
}

// RecallInput is the arguments of recall.
type RecallInput struct {
	Key string `json:"key" jsonschema:"description=the key a value was remembered under"`
}

// Recall returns the recall tool: it reads a session variable (as JSON).
// A key with no value is an error result.
func Recall() *agent.Tool {
	return agent.NewTool("recall", "Recall the value remembered under a key.", func(ctx context.Context, in RecallInput) (string, error) {
		v, ok := agent.Var(ctx, in.Key)
		if !ok {
			return "", fmt.Errorf("nothing is remembered under %q", in.Key)
		}
		return compact(v), nil
	})
}

func compact(v json.RawMessage) string {
	out, err := json.Marshal(v) // compacts
	if err != nil {
		return string(v)
	}
	return string(out)
}

// AppendFileInput is the arguments of append_file.
type AppendFileInput struct {
	Path string `json:"path" jsonschema:"description=the file to append to; created if missing"`
	Line string `json:"line" jsonschema:"description=one line of text, without a line break"`
}

// AppendFile returns the append_file tool: it appends one line to a file
// and syncs it. It has a side effect, so it is not idempotent: if the
// process stops while it runs, resuming records "outcome unknown" rather
// than appending twice.
func AppendFile() *agent.Tool {
	return agent.NewTool("append_file", "Append one line of text to a file.", func(_ context.Context, in AppendFileInput) (string, error) {
		if in.Path == "" {
			return "", errors.New(`bad argument "path": is empty`)
		}
		if strings.ContainsAny(in.Line, "\r\n") {
			return "", errors.New(`bad argument "line": holds a line break; append one line per call`)
		}
		f, err := os.OpenFile(in.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return "", fmt.Errorf("append_file: %w", err)
		}
		_, werr := f.WriteString(in.Line + "\n")
		serr := f.Sync()
		cerr := f.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			return "", fmt.Errorf("append_file %s: %w", in.Path, err)
		}
		return fmt.Sprintf("appended 1 line to %s", in.Path), nil
	}, agent.NotIdempotent())
}
