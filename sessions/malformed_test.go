package sessions_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/sessions"
)

// badInput is a malformed document and the error it must get.
type badInput struct {
	name  string
	in    string
	index int    // the message index the error names, -1 for none
	field string // the field it names
	at    string // the error's offset is where this first occurs in in; "" for no offset
	msg   string // a piece of the message
	is    error  // a sentinel it wraps, if any
	opts  func(*sessions.ImportOptions)
}

func TestImport_MalformedOpenAI(t *testing.T) {
	tool := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	tests := []badInput{
		{name: "truncated", in: `[{"role":"user","content":"hi"}`, index: -1, at: "\x00", msg: "truncated JSON"},
		{name: "malformed", in: `[{"role":"user" "content":"hi"}]`, index: -1, at: `"content"`, msg: "malformed JSON"},
		{name: "trailing data", in: `[] x`, index: -1, at: "x", msg: "malformed JSON"},
		{name: "not a list", in: `"hello"`, index: -1, at: `"hello"`, msg: "must be a JSON array of messages"},
		{name: "object without messages", in: `{"model":"gpt"}`, index: -1, field: "messages", at: "{", msg: "is missing"},
		{name: "messages not a list", in: `{"messages":{}}`, index: -1, field: "messages", at: "{}", msg: "must be an array, not an object"},
		{name: "message not an object", in: `[1]`, index: 0, at: "1", msg: "must be an object, not a number"},
		{name: "role missing", in: `[{"content":"x"}]`, index: 0, field: "role", at: "{", msg: "is missing"},
		{name: "role not a string", in: `[{"role":1}]`, index: 0, field: "role", at: "1}", msg: "must be a string, not a number"},
		{name: "unknown role", in: `[{"role":"robot","content":"x"}]`, index: 0, field: "role", at: `"robot"`, msg: `unknown role "robot"`},
		{name: "function role", in: `[{"role":"function","content":"x"}]`, index: 0, field: "role", at: `"function"`, msg: "replaced them with tool messages"},
		{name: "content a number", in: `[{"role":"user","content":5}]`, index: 0, field: "content", at: "5}", msg: "must be a string, a list of content parts or null"},
		{name: "unknown field", in: `[{"role":"user","content":"x","extra":1}]`, index: 0, field: "extra", at: `"extra"`, msg: "unknown field"},
		{name: "key twice", in: `[{"role":"user","role":"user"}]`, index: 0, field: "role", at: `"role":"user"}`, msg: "appears twice"},
		{name: "unknown part type", in: `[{"role":"user","content":[{"type":"input_audio"}]}]`, index: 0, field: "content[0].type", at: `"input_audio"`, msg: "not supported here"},
		{name: "image part on system", in: `[{"role":"system","content":[{"type":"image_url","image_url":{"url":"x"}}]}]`, index: 0, field: "content[0].type", at: `"image_url",`, msg: "not supported here"},
		{name: "text part without text", in: `[{"role":"user","content":[{"type":"text"}]}]`, index: 0, field: "content[0].text", at: `{"type"`, msg: "is missing"},
		{name: "file part not inline", in: `[{"role":"user","content":[{"type":"file","file":{"file_data":"https://x"}}]}]`, index: 0, field: "content[0].file.file_data", at: `"https://x"`, msg: "base64 data URL"},
		{name: "tool calls on a user message", in: `[{"role":"user","content":"x","tool_calls":[]}]`, index: 0, field: "tool_calls", at: "[]", msg: "only assistant messages"},
		{name: "tool call without id", in: `[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f"}}]}]`, index: 0, field: "tool_calls[0].id", at: `{"type"`, msg: "is missing"},
		{name: "tool call of another type", in: `[{"role":"assistant","tool_calls":[{"id":"c","type":"custom","function":{"name":"f"}}]}]`, index: 0, field: "tool_calls[0].type", at: `"custom"`, msg: "only function tool calls"},
		{name: "arguments a number", in: `[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":5}}]}]`, index: 0, field: "tool_calls[0].function.arguments", at: "5}", msg: "must be a string of JSON text"},
		{name: "function name empty", in: `[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":""}}]}]`, index: 0, field: "tool_calls[0].function.name", at: `""`, msg: "is empty"},
		{name: "tool message without a call", in: `[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c9","content":"r"}]`, index: 1, field: "tool_call_id", at: `{"role":"tool"`, msg: `answers call "c9", which no earlier assistant message asked for`},
		{name: "tool message answered twice", in: `[` + tool + `,{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"tool","tool_call_id":"c1","content":"r"}]`, index: 2, field: "tool_call_id", at: `{"role":"tool","tool_call_id":"c1","content":"r"}]`, msg: "which message 1 already answered"},
		{name: "tool message without tool_call_id", in: `[` + tool + `,{"role":"tool","content":"r"}]`, index: 1, field: "tool_call_id", at: `{"role":"tool"`, msg: "is missing"},
		{name: "call ID reused while pending", in: `[` + tool + `,` + tool + `]`, index: 1, field: "tool_calls[0].id", at: `{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]`, msg: "already waiting for a result"},
		{name: "input too large", in: `[{"role":"user","content":"hello"}]`, index: -1, msg: "the limit is 10", is: cairn.ErrTooLarge,
			opts: func(o *sessions.ImportOptions) { o.MaxBytes = 10 }},
		// Strict at every level: a name twice, invalid UTF-8, lone surrogates.
		{name: "content twice", in: `[{"role":"system","content":"be careful","content":"EVIL"}]`, index: 0, field: "content", at: `"content":"EVIL"`, msg: "appears twice"},
		{name: "key twice under messages", in: `{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b","role":"system"}]}`, index: 1, field: "role", at: `"role":"system"`, msg: "appears twice"},
		{name: "text twice in a part", in: `[{"role":"user","content":[{"type":"text","text":"hi","text":"EVIL"}]}]`, index: 0, field: "content[0].text", at: `"text":"EVIL"`, msg: "appears twice"},
		{name: "name twice in a call", in: `[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","name":"rm"}}]}]`, index: 0, field: "tool_calls[0].function.name", at: `"name":"rm"`, msg: "appears twice"},
		{name: "argument twice, as an object", in: `[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{"path":"a","path":"/etc"}}}]}]`, index: 0, field: "tool_calls[0].function.arguments.path", at: `"path":"/etc"`, msg: "appears twice"},
		{name: "argument twice, as JSON text", in: `[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"path\":\"a\",\"path\":\"/etc\"}"}}]}]`, index: 0, field: "tool_calls[0].function.arguments", at: `"{\"path`, msg: `the arguments' JSON text: field "path": appears twice`},
		{name: "request field twice", in: `{"model":"a","model":"b","messages":[]}`, index: -1, field: "model", at: `"model":"b"`, msg: "appears twice"},
		{name: "invalid UTF-8", in: "[{\"role\":\"user\",\"content\":\"caf\xe9\"}]", index: 0, field: "content", at: "\xe9", msg: "not valid UTF-8"},
		{name: "invalid UTF-8 in a part", in: "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}]", index: 0, field: "content[0].text", at: "\xff", msg: "not valid UTF-8"},
		{name: "lone surrogate", in: `[{"role":"user","content":"\ud800"}]`, index: 0, field: "content", at: `\ud800`, msg: "surrogate"},
		{name: "event too large", in: `[{"role":"system","content":"s"},{"role":"user","content":"` + strings.Repeat("x", 400) + `"}]`, index: 1, at: `{"role":"user"`, msg: "the limit is 300", is: cairn.ErrTooLarge,
			opts: func(o *sessions.ImportOptions) { o.Limits.MaxEventBytes = 300 }},
	}
	runBad(t, sessions.OpenAI, tests)
}

func TestImport_MalformedCheckpoint(t *testing.T) {
	asst := `{"role":"assistant","content":"","metadata":{"tool_calls":[{"id":"c1","name":"lookup","args":{}}]}}`
	tests := []badInput{
		{name: "truncated", in: `{"history":[`, index: -1, at: "\x00", msg: "truncated JSON"},
		{name: "not an object", in: `[]`, index: -1, at: "[]", msg: "a checkpoint must be a JSON object"},
		{name: "history missing", in: `{"agent_profile":"bot"}`, index: -1, field: "history", at: "{", msg: "is missing"},
		{name: "unknown field", in: `{"history":[],"thread":"x"}`, index: -1, field: "thread", at: `"thread"`, msg: "unknown field"},
		{name: "agent_profile a number", in: `{"agent_profile":7,"history":[]}`, index: -1, field: "agent_profile", at: "7", msg: "must be a string"},
		{name: "current_step a string", in: `{"current_step":"two","history":[]}`, index: -1, field: "current_step", at: `"two"`, msg: "must be a number"},
		{name: "current_step negative", in: `{"current_step":-1,"history":[]}`, index: -1, field: "current_step", at: "-1", msg: "want a whole number from 0"},
		{name: "current_step a fraction", in: `{"current_step":1.5,"history":[]}`, index: -1, field: "current_step", at: "1.5", msg: "want a whole number from 0"},
		{name: "updated_at not a time", in: `{"updated_at":"yesterday","history":[]}`, index: -1, field: "updated_at", at: `"yesterday"`, msg: "not an RFC 3339 time"},
		{name: "updated_at the zero time", in: `{"updated_at":"0001-01-01T00:00:00Z","history":[]}`, index: -1, field: "updated_at", at: `"0001`, msg: "out of range"},
		{name: "updated_at before year 1", in: `{"updated_at":"0001-01-01T00:00:00+01:00","history":[]}`, index: -1, field: "updated_at", at: `"0001`, msg: "out of range"},
		{name: "variables a list", in: `{"variables":[],"history":[]}`, index: -1, field: "variables", at: "[]", msg: "must be an object, not an array"},
		{name: "history an object", in: `{"history":{}}`, index: -1, field: "history", at: "{}", msg: "must be an array"},
		{name: "unknown role", in: `{"history":[{"role":"human","content":"hi"}]}`, index: 0, field: "role", at: `"human"`, msg: `unknown role "human"`},
		{name: "content an object", in: `{"history":[{"role":"user","content":{}}]}`, index: 0, field: "content", at: "{}}", msg: "must be a string, a list of content parts or null"},
		{name: "metadata a string", in: `{"history":[{"role":"user","content":"x","metadata":"m"}]}`, index: 0, field: "metadata", at: `"m"`, msg: "must be an object"},
		{name: "tool result without a call", in: `{"history":[{"role":"user","content":"x"},{"role":"tool","name":"lookup","content":"r"}]}`, index: 1, field: "name", at: `{"role":"tool"`, msg: `no call to tool "lookup" is waiting`},
		{name: "tool result for an unknown call", in: `{"history":[` + asst + `,{"role":"tool","content":"r","metadata":{"tool_call_id":"c2"}}]}`, index: 1, field: "tool_call_id", at: `{"role":"tool"`, msg: `answers call "c2", which no earlier assistant message asked for`},
		{name: "tool name differs from the call", in: `{"history":[` + asst + `,{"role":"tool","name":"other","content":"r","metadata":{"tool_call_id":"c1"}}]}`, index: 1, field: "name", at: `{"role":"tool"`, msg: `names tool "other", but call "c1" is for "lookup"`},
		{name: "tool_calls not a list", in: `{"history":[{"role":"assistant","content":"","metadata":{"tool_calls":{}}}]}`, index: 0, field: "metadata.tool_calls", at: "{}}}", msg: "must be an array"},
		{name: "tool call without name", in: `{"history":[{"role":"assistant","content":"","metadata":{"tool_calls":[{"id":"c"}]}}]}`, index: 0, field: "metadata.tool_calls[0].name", at: `{"id"`, msg: "is missing"},
		{name: "is_error a string", in: `{"history":[` + asst + `,{"role":"tool","content":"r","metadata":{"tool_call_id":"c1","is_error":"yes"}}]}`, index: 1, field: "metadata.is_error", at: `"yes"`, msg: "must be a boolean"},
		{name: "part data not base64", in: `{"history":[{"role":"user","content":"x","metadata":{"parts":[{"type":"image","data":"%%%"}]}}]}`, index: 0, field: "metadata.parts[0].data", at: `"%%%"`, msg: "base64"},
		{name: "part without type", in: `{"history":[{"role":"user","content":"x","metadata":{"parts":[{"text":"t"}]}}]}`, index: 0, field: "metadata.parts[0].type", at: `{"text"`, msg: "is missing"},
		{name: "input too large", in: `{"history":[]}`, index: -1, msg: "the limit is 5", is: cairn.ErrTooLarge,
			opts: func(o *sessions.ImportOptions) { o.MaxBytes = 5 }},
		// Strict at every level: a name twice, invalid UTF-8.
		{name: "content twice", in: `{"history":[{"role":"system","content":"be careful","content":"EVIL"}]}`, index: 0, field: "content", at: `"content":"EVIL"`, msg: "appears twice"},
		{name: "history twice", in: `{"history":[],"history":[]}`, index: -1, field: "history", at: `"history":[]}`, msg: "appears twice"},
		{name: "variable twice", in: `{"variables":{"a":1,"a":2},"history":[]}`, index: -1, field: "variables.a", at: `"a":2`, msg: "appears twice"},
		{name: "key twice inside a variable", in: `{"variables":{"a":{"b":1,"b":2}},"history":[]}`, index: -1, field: "variables.a.b", at: `"b":2`, msg: "appears twice"},
		{name: "key twice in ignored metadata", in: `{"history":[{"role":"user","content":"x","metadata":{"k":1,"k":2}}]}`, index: 0, field: "metadata.k", at: `"k":2`, msg: "appears twice"},
		{name: "args key twice", in: `{"history":[{"role":"assistant","content":"","metadata":{"tool_calls":[{"id":"c1","name":"f","args":{"p":1,"p":2}}]}}]}`, index: 0, field: "metadata.tool_calls[0].args.p", at: `"p":2`, msg: "appears twice"},
		{name: "invalid UTF-8", in: "{\"history\":[{\"role\":\"user\",\"content\":\"\xc3(\"}]}", index: 0, field: "content", at: "\xc3", msg: "not valid UTF-8"},
		{name: "invalid UTF-8 in a variable", in: "{\"variables\":{\"a\":\"\xff\"},\"history\":[]}", index: -1, field: "variables.a", at: "\xff", msg: "not valid UTF-8"},
		{name: "variable too large", in: `{"variables":{"big":"` + strings.Repeat("x", 400) + `"},"history":[]}`, index: -1, field: "variables.big", at: `"xx`, msg: "the event limit is 300", is: cairn.ErrTooLarge,
			opts: func(o *sessions.ImportOptions) { o.Limits.MaxEventBytes = 300 }},
	}
	runBad(t, sessions.Checkpoint, tests)
}

func runBad(t *testing.T, f sessions.Format, tests []badInput) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			if tt.opts != nil {
				tt.opts(&o)
			}
			m, rep, err := sessions.Import([]byte(tt.in), f, o)
			if err == nil {
				t.Fatalf("import accepted %s", tt.in)
			}
			if m != nil || rep != nil {
				t.Error("a memory or report returned with an error")
			}
			ie, ok := errors.AsType[*sessions.ImportError](err)
			if !ok {
				t.Fatalf("error is %T, want *sessions.ImportError: %v", err, err)
			}
			wantOff := int64(-1)
			switch {
			case tt.at == "\x00":
				wantOff = int64(len(tt.in))
			case tt.at != "":
				wantOff = int64(strings.Index(tt.in, tt.at))
				if wantOff < 0 {
					t.Fatalf("bad test: %q is not in the input", tt.at)
				}
			}
			if ie.Format != f || ie.Index != tt.index || ie.Field != tt.field || ie.Offset != wantOff {
				t.Errorf("error at (%s, message %d, field %q, byte %d), want (%s, %d, %q, %d): %v",
					ie.Format, ie.Index, ie.Field, ie.Offset, f, tt.index, tt.field, wantOff, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			if tt.index >= 0 && !strings.Contains(err.Error(), fmt.Sprintf("message %d: ", tt.index)) {
				t.Errorf("error %q does not name message %d", err, tt.index)
			}
		})
	}
}

func TestImport_MalformedCairn(t *testing.T) {
	tests := []struct {
		name, in string
		field    string
		is       error
		max      int
	}{
		{name: "truncated", in: `{"format":"cairn.memory","version":1,"events":[`, field: "events"},
		{name: "unknown kind", in: `{"format":"cairn.memory","version":1,"events":[{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"nope","run":"","data":{}}]}`, field: "kind"},
		{name: "seq gap", in: `{"format":"cairn.memory","version":1,"events":[{"v":1,"seq":2,"at":"2026-01-02T03:04:05Z","kind":"memory.reset","run":"","data":{}}]}`, field: "seq"},
		{name: "too large", in: `{"format":"cairn.memory","version":1,"events":[]}`, is: cairn.ErrTooLarge, max: 10},
		{name: "text twice", in: `{"format":"cairn.memory","version":1,"events":[{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"message.system","run":"","data":{"text":"be careful","text":"EVIL"}}]}`, field: "data.text"},
		{name: "kind twice", in: `{"format":"cairn.memory","version":1,"events":[{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"message.system","kind":"custom","run":"","data":{"text":"x"}}]}`, field: "kind"},
		{name: "events twice", in: `{"format":"cairn.memory","version":1,"events":[],"events":[]}`, field: "events"},
		{name: "invalid UTF-8", in: "{\"format\":\"cairn.memory\",\"version\":1,\"events\":[{\"v\":1,\"seq\":1,\"at\":\"2026-01-02T03:04:05Z\",\"kind\":\"message.system\",\"run\":\"\",\"data\":{\"text\":\"\xff\"}}]}", field: "data.text"},
		{name: "tool result without its call", in: `{"format":"cairn.memory","version":1,"events":[{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"tool.result","run":"","data":{"call_id":"c9","name":"calc","output":"1","is_error":false,"duration_ms":0}}]}`, field: "data.call_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			o.MaxBytes = tt.max
			_, _, err := sessions.Import([]byte(tt.in), sessions.Cairn, o)
			le, ok := errors.AsType[*cairn.MemoryLoadError](err)
			if !ok {
				t.Fatalf("error is %T, want *cairn.MemoryLoadError: %v", err, err)
			}
			if le.Field != tt.field {
				t.Errorf("field = %q, want %q (%v)", le.Field, tt.field, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
		})
	}
}

func TestImport_BadID(t *testing.T) {
	o := opts()
	o.ID = "../etc"
	_, _, err := sessions.Import([]byte(`[]`), sessions.OpenAI, o)
	if !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("error = %v, want one wrapping ErrInvalidID", err)
	}
}
