package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/invopop/jsonschema"
)

// Tool is a function a model may call. Make one with NewTool (typed
// arguments, schema derived from a struct) or NewRawTool (raw JSON
// arguments, schema given). A Tool is safe for concurrent use when its
// function is: parallel calls from one model response run concurrently.
type Tool struct {
	name        string
	description string
	schema      json.RawMessage
	call        func(ctx context.Context, args json.RawMessage) (string, error)
	opts        toolOptions
}

type toolOptions struct {
	notIdempotent bool
	approval      bool
	rerun         bool
}

// ToolOption configures a Tool.
type ToolOption func(*toolOptions)

// NotIdempotent marks a tool whose call has a side effect that must not
// happen twice (sending a mail, appending to a file). Before such a tool
// runs, the agent records tool.started; if the process dies before the
// result is recorded, resuming gives the call an explicit error result
// ("outcome unknown") instead of running it again, unless RerunOnResume is
// also set. Tools are idempotent by default: a call that was asked for but
// has no recorded result is simply run (again) on resume.
func NotIdempotent() ToolOption { return func(o *toolOptions) { o.notIdempotent = true } }

// RequireApproval makes every call of the tool wait for a person's
// decision (Session.Approve) before it runs. The run stops with status
// awaiting_approval and resumes with Session.ResumeRun.
func RequireApproval() ToolOption { return func(o *toolOptions) { o.approval = true } }

// RerunOnResume lets a tool that is not idempotent be run again on resume
// when its earlier call started but recorded no result (the tool knows how
// to make a repeated call safe, for example with an idempotency key).
func RerunOnResume() ToolOption { return func(o *toolOptions) { o.rerun = true } }

// With returns a copy of the tool with opts applied on top of its own:
// builtin.Tools()[i].With(agent.RequireApproval()), say.
func (t *Tool) With(opts ...ToolOption) *Tool {
	c := *t
	for _, o := range opts {
		o(&c.opts)
	}
	return &c
}

// Name returns the tool's name, as the model calls it.
func (t *Tool) Name() string { return t.name }

// Description returns what the tool does, for the model.
func (t *Tool) Description() string { return t.description }

// Schema returns the JSON Schema of the tool's arguments object.
func (t *Tool) Schema() json.RawMessage { return slices.Clone(t.schema) }

// Idempotent reports whether a call may safely run twice (the default).
func (t *Tool) Idempotent() bool { return !t.opts.notIdempotent }

// RequiresApproval reports whether each call waits for a person's decision.
func (t *Tool) RequiresApproval() bool { return t.opts.approval }

// RerunsOnResume reports whether a started call without a result is run again on resume.
func (t *Tool) RerunsOnResume() bool { return t.opts.rerun }

// safety names the tool's crash-safety class for telemetry:
// "idempotent" (run again on resume), "side_effect" (its start is
// recorded; a start without a result is an unknown outcome) or
// "side_effect_rerun" (RerunOnResume).
func (t *Tool) safety() string {
	switch {
	case !t.opts.notIdempotent:
		return "idempotent"
	case t.opts.rerun:
		return "side_effect_rerun"
	}
	return "side_effect"
}

// Call runs the tool with raw JSON arguments. Variables are only available
// when the agent calls it (see Var and SetVar).
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.call(ctx, args)
}

var reflector = &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}

// NewTool makes a tool whose arguments decode into In, a struct. The JSON
// Schema the model sees is derived from In with github.com/invopop/jsonschema
// (json tags name the fields; fields without omitempty are required;
// `jsonschema:"description=…"` tags describe them). Arguments are decoded
// strictly: an unknown field, a missing required field or a value of the
// wrong type is an error result that names the field, and fn is not called.
func NewTool[In any](name, description string, fn func(ctx context.Context, in In) (string, error), opts ...ToolOption) *Tool {
	typ := reflect.TypeFor[In]()
	if typ.Kind() != reflect.Struct {
		panic(fmt.Sprintf("agent: NewTool %s: the input type %s is not a struct", name, typ))
	}
	s := reflector.ReflectFromType(typ)
	s.Version = ""
	schema, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("agent: NewTool %s: schema: %v", name, err))
	}
	required := s.Required
	call := func(ctx context.Context, args json.RawMessage) (string, error) {
		var in In
		if err := decodeArgs(args, required, &in); err != nil {
			return "", err
		}
		return fn(ctx, in)
	}
	return newTool(name, description, schema, call, opts)
}

// NewRawTool makes a tool from a JSON Schema and a function that receives
// the raw JSON arguments (an object; "{}" when the model gave none).
func NewRawTool(name, description string, schema json.RawMessage, fn func(ctx context.Context, args json.RawMessage) (string, error), opts ...ToolOption) *Tool {
	if !json.Valid(schema) {
		panic(fmt.Sprintf("agent: NewRawTool %s: the schema is not valid JSON", name))
	}
	return newTool(name, description, slices.Clone(schema), fn, opts)
}

func newTool(name, description string, schema json.RawMessage, fn func(context.Context, json.RawMessage) (string, error), opts []ToolOption) *Tool {
	if name == "" {
		panic("agent: a tool needs a name")
	}
	t := &Tool{name: name, description: description, schema: schema, call: fn}
	for _, o := range opts {
		o(&t.opts)
	}
	return t
}

// DefaultMaxToolOutput is the most bytes of a tool call's output or error
// that a tool.result keeps when Agent.MaxToolOutput is 0. Even text that
// JSON writes six bytes a byte fits the default event size limit
// (cairn.DefaultMaxEventBytes) at this length.
const DefaultMaxToolOutput = 100_000

// CutOutput returns text cut to at most max bytes, on a character
// boundary, followed by a line saying how much there was and how much is
// shown: "[cut: the result has N bytes; the first M are shown]". Text no
// longer than max is returned as it is; max <= 0 means
// DefaultMaxToolOutput. The agent cuts every tool's text so before it
// enters a tool.result; a tool that keeps a tighter limit of its own (an
// MCP server's max_output_bytes) cuts with it too.
func CutOutput(text string, max int) string {
	if max <= 0 {
		max = DefaultMaxToolOutput
	}
	if len(text) <= max {
		return text
	}
	n := max
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + fmt.Sprintf("\n[cut: the result has %d bytes; the first %d are shown]", len(text), n)
}

// ArgumentError says which argument of a tool call is wrong.
type ArgumentError struct {
	Field string // the argument at fault, "" for the whole object
	Msg   string
}

// Error names the argument and what is wrong with it.
func (e *ArgumentError) Error() string {
	if e.Field == "" {
		return "bad arguments: " + e.Msg
	}
	return fmt.Sprintf("bad argument %q: %s", e.Field, e.Msg)
}

// decodeArgs decodes a JSON object strictly into v.
func decodeArgs(args json.RawMessage, required []string, v any) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil || fields == nil {
		return &ArgumentError{Msg: "the arguments must be a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return &ArgumentError{Field: te.Field, Msg: fmt.Sprintf("has a %s where a %s belongs", te.Value, te.Type)}
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return &ArgumentError{Field: strings.Trim(f, `"`), Msg: "is not an argument of this tool"}
		}
		return &ArgumentError{Msg: err.Error()}
	}
	for _, r := range required {
		if _, ok := fields[r]; !ok {
			return &ArgumentError{Field: r, Msg: "is missing"}
		}
	}
	return nil
}

// callScope is what a tool call can see and change of the session: its
// variables. Changes are recorded as one state.set with the tool.result.
type callScope struct {
	callID  string
	session string                     // the session of the call
	seq     int64                      // the seq of the model response that asked for it
	vars    map[string]json.RawMessage // the variables when the act step began
	set     map[string]json.RawMessage
	deleted []string
}

type scopeKey struct{}

func withScope(ctx context.Context, s *callScope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

func scopeOf(ctx context.Context) *callScope {
	s, _ := ctx.Value(scopeKey{}).(*callScope)
	return s
}

// ErrNoSession is returned by SetVar outside a tool call made by an agent.
var ErrNoSession = errors.New("no session variables here: not inside a tool call")

// CallID returns the ID of the tool call running in ctx, or "".
func CallID(ctx context.Context) string {
	if s := scopeOf(ctx); s != nil {
		return s.callID
	}
	return ""
}

// CallSource returns where the tool call running in ctx comes from: its
// session's ID and the seq of the model response that asked for it, the
// provenance of what the call records elsewhere (a long-term memory's
// Source, say). Outside a tool call made by an agent it returns "" and 0.
func CallSource(ctx context.Context) (session string, seq int64) {
	if s := scopeOf(ctx); s != nil {
		return s.session, s.seq
	}
	return "", 0
}

// Var returns the session variable key as a tool call running in ctx sees
// it: the variables when the act step began, with this call's own changes.
func Var(ctx context.Context, key string) (json.RawMessage, bool) {
	s := scopeOf(ctx)
	if s == nil {
		return nil, false
	}
	if v, ok := s.set[key]; ok {
		return slices.Clone(v), true
	}
	if slices.Contains(s.deleted, key) {
		return nil, false
	}
	v, ok := s.vars[key]
	return slices.Clone(v), ok
}

// SetVar sets the session variable key to value (encoded as JSON) from a
// tool call. The change is recorded as state.set in the same atomic append
// as the call's result, so it is saved exactly when the result is.
func SetVar(ctx context.Context, key string, value any) error {
	s := scopeOf(ctx)
	if s == nil {
		return ErrNoSession
	}
	if key == "" {
		return errors.New("set variable: the key is empty")
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("set variable %s: %w", key, err)
	}
	if s.set == nil {
		s.set = map[string]json.RawMessage{}
	}
	s.set[key] = raw
	s.deleted = slices.DeleteFunc(s.deleted, func(k string) bool { return k == key })
	return nil
}

// DeleteVar deletes the session variable key from a tool call.
func DeleteVar(ctx context.Context, key string) error {
	s := scopeOf(ctx)
	if s == nil {
		return ErrNoSession
	}
	delete(s.set, key)
	if !slices.Contains(s.deleted, key) {
		s.deleted = append(s.deleted, key)
	}
	return nil
}
