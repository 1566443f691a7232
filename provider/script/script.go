package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/internal/adapter"
)

// Script is a parsed script file.
type Script struct {
	Steps []Step `json:"steps"`
}

// Step is one model response.
type Step struct {
	Text      string `json:"text,omitempty"`
	ToolCalls []Call `json:"tool_calls,omitempty"`
	DelayMS   int    `json:"delay_ms,omitempty"` // simulated latency, honoured and cancellable
}

// Call is one tool call of a step.
type Call struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // a JSON object; absent means {}
}

// Model replays a Script.
type Model struct {
	id     string
	script Script
}

var _ provider.Model = (*Model)(nil)

// New returns a model that replays s, with ID "script". It validates s as
// Load does.
func New(s Script) (*Model, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &Model{id: "script", script: s}, nil
}

// Load reads and validates a script file strictly: malformed JSON, unknown
// or mistyped fields, steps without content, calls without a name and
// arguments that are not an object are errors naming the file, the line and
// column, and the step. The model's ID is "script:" + path.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		if le, ok := errors.AsType[*LoadError](err); ok {
			le.Path = path
		}
		return nil, err
	}
	return &Model{id: "script:" + path, script: *s}, nil
}

// LoadError says what is wrong with a script and where.
type LoadError struct {
	Path   string // the file, when loaded from one
	Line   int    // 1-based, 0 when unknown
	Column int    // 1-based, 0 when unknown
	Step   int    // 1-based, 0 when not about one step
	Field  string // such as "tool_calls[0].name"
	Msg    string
}

// Error gives the file, line:column, step, field and problem.
func (e *LoadError) Error() string {
	s := "load script"
	if e.Path != "" {
		s += " " + e.Path
	}
	if e.Line > 0 {
		s += fmt.Sprintf(":%d:%d", e.Line, e.Column)
	}
	s += ": "
	if e.Step > 0 {
		s += fmt.Sprintf("step %d: ", e.Step)
	}
	if e.Field != "" {
		s += e.Field + ": "
	}
	return s + e.Msg
}

// Parse decodes and validates a script document.
func Parse(data []byte) (*Script, error) {
	fail := func(off int64, step int, field, msg string) (*Script, error) {
		line, col := position(data, off)
		return nil, &LoadError{Line: line, Column: col, Step: step, Field: field, Msg: msg}
	}
	// Syntax first, with a position counted from the document's start.
	if err := json.Unmarshal(data, new(any)); err != nil {
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			msg := "malformed JSON: " + se.Error()
			if strings.Contains(se.Error(), "unexpected end of JSON input") {
				msg = "truncated JSON: the script ends early"
			}
			return fail(se.Offset-1, 0, "", msg)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return fail(dec.InputOffset(), 0, "", "the script must be a JSON object {\"steps\": [...]}")
	}
	var s Script
	seenSteps := false
	for dec.More() {
		keyOff := dec.InputOffset()
		keyOff += skipSpace(data[keyOff:])
		tok, err := dec.Token()
		if err != nil {
			return fail(dec.InputOffset(), 0, "", syntaxMsg(err))
		}
		if key, _ := tok.(string); key != "steps" {
			return fail(keyOff, 0, fmt.Sprint(tok), "unknown field (a script has only \"steps\")")
		}
		if seenSteps {
			return fail(keyOff, 0, "steps", "appears twice")
		}
		seenSteps = true
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return fail(dec.InputOffset(), 0, "steps", "must be an array")
		}
		for dec.More() {
			off := dec.InputOffset()
			off += skipSpace(data[off:])
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fail(off, len(s.Steps)+1, "", syntaxMsg(err))
			}
			step, field, msg := decodeStep(raw)
			if msg == "" {
				field, msg = step.check()
			}
			if msg != "" {
				return fail(off, len(s.Steps)+1, field, msg)
			}
			s.Steps = append(s.Steps, step)
		}
		if _, err := dec.Token(); err != nil {
			return fail(dec.InputOffset(), 0, "steps", syntaxMsg(err))
		}
	}
	if _, err := dec.Token(); err != nil {
		return fail(dec.InputOffset(), 0, "", syntaxMsg(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail(dec.InputOffset(), 0, "", "trailing data after the script")
	}
	if !seenSteps {
		return fail(0, 0, "steps", "is missing")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func syntaxMsg(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "truncated JSON: the script ends early"
	}
	return "malformed JSON: " + err.Error()
}

func skipSpace(b []byte) int64 {
	n := int64(0)
	for n < int64(len(b)) && bytes.IndexByte([]byte(" \t\r\n,"), b[n]) >= 0 {
		n++
	}
	return n
}

// decodeStep decodes one step strictly, returning the field and message
// of the first problem.
func decodeStep(raw json.RawMessage) (Step, string, string) {
	var step Step
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&step); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return step, te.Field, fmt.Sprintf("has a %s where a %s belongs", te.Value, te.Type)
		}
		return step, "", err.Error()
	}
	return step, "", ""
}

// Validate checks a script: at least one step, non-negative delays, calls
// with a name and arguments that are a JSON object.
func (s Script) Validate() error {
	if len(s.Steps) == 0 {
		return &LoadError{Field: "steps", Msg: "is empty; a script needs at least one step"}
	}
	for i, st := range s.Steps {
		if field, msg := st.check(); msg != "" {
			return &LoadError{Step: i + 1, Field: field, Msg: msg}
		}
	}
	return nil
}

// check returns the field and message of a step's first problem.
func (st Step) check() (string, string) {
	if st.DelayMS < 0 {
		return "delay_ms", fmt.Sprintf("is %d; want 0 or more", st.DelayMS)
	}
	for j, c := range st.ToolCalls {
		if c.Name == "" {
			return fmt.Sprintf("tool_calls[%d].name", j), "is missing"
		}
		if len(c.Arguments) > 0 {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(c.Arguments, &obj); err != nil || obj == nil {
				return fmt.Sprintf("tool_calls[%d].arguments", j), "must be a JSON object"
			}
		}
	}
	return "", ""
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// ID implements provider.Model.
func (m *Model) ID() string { return m.id }

// Steps returns how many steps the script has.
func (m *Model) Steps() int { return len(m.script.Steps) }

// Generate implements provider.Model: it answers with step req.Responses.
// Asked for a summary (provider.PurposeSummary), it answers with
// provider.Digest and consumes no step. Its usage is provider's estimate
// of the request and of the answer.
func (m *Model) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	if req.Purpose == provider.PurposeSummary {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: summary: %w", m.id, err)
		}
		resp := &provider.Response{Text: provider.Digest(req), Model: m.id, FinishReason: "stop"}
		resp.Usage = adapter.EstimatedUsage(req, resp)
		return resp, nil
	}
	n := req.Responses
	if n < 0 || n >= len(m.script.Steps) {
		return nil, fmt.Errorf("%s: asked for step %d of a %d-step script: %w", m.id, n+1, len(m.script.Steps), provider.ErrScriptEnded)
	}
	st := m.script.Steps[n]
	if st.DelayMS > 0 {
		t := time.NewTimer(time.Duration(st.DelayMS) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%s: step %d: %w", m.id, n+1, context.Cause(ctx))
		case <-t.C:
		}
	} else if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: step %d: %w", m.id, n+1, err)
	}
	resp := &provider.Response{Text: st.Text, Model: m.id, FinishReason: "stop"}
	for i, c := range st.ToolCalls {
		args := c.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		resp.ToolCalls = append(resp.ToolCalls, cairn.ToolCall{ID: fmt.Sprintf("call_%d_%d", n, i), Name: c.Name, Args: args})
	}
	if len(resp.ToolCalls) > 0 {
		resp.FinishReason = "tool_calls"
	}
	if req.OnText != nil && st.Text != "" {
		req.OnText(st.Text)
	}
	resp.Usage = adapter.EstimatedUsage(req, resp)
	return resp, nil
}
