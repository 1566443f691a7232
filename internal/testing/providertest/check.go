package providertest

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
)

// UserRequest is a request of one user message.
func UserRequest(text string) *provider.Request {
	return &provider.Request{Messages: []cairn.Message{{Role: cairn.RoleUser, Content: text}}}
}

// Object decodes the request body as a JSON object, and fails t when it is
// not one.
func (r Received) Object(t testing.TB) map[string]json.RawMessage {
	t.Helper()
	var b map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatalf("request body %s: %v", r.Body, err)
	}
	return b
}

// JSONEqual reports whether two JSON documents hold the same value, and
// fails t when either is not JSON.
func JSONEqual(t testing.TB, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want invalid JSON %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

// CheckBody checks that the request body holds each field of want, with
// the same JSON value.
func CheckBody(t testing.TB, r Received, want map[string]string) {
	t.Helper()
	got := r.Object(t)
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			t.Errorf("request body has no %q: %s", key, r.Body)
			continue
		}
		if !JSONEqual(t, g, []byte(w)) {
			t.Errorf("request %s:\n got %s\nwant %s", key, g, w)
		}
	}
}

// CheckStream makes a call of one user message on m, and checks that the
// text deltas sent to OnText are deltas, in order, and that the response
// is want: its text, finish reason, usage, model and tool calls
// (CheckToolCalls). It returns the response.
func CheckStream(t testing.TB, m provider.Model, deltas []string, want provider.Response) *provider.Response {
	t.Helper()
	var got []string
	req := UserRequest("Hi")
	req.OnText = func(d string) { got = append(got, d) }
	resp, err := m.Generate(t.Context(), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if !slices.Equal(got, deltas) {
		t.Errorf("OnText got %q, want %q", got, deltas)
	}
	if resp.Text != want.Text {
		t.Errorf("Text = %q, want %q", resp.Text, want.Text)
	}
	if resp.FinishReason != want.FinishReason {
		t.Errorf("FinishReason = %q, want %q", resp.FinishReason, want.FinishReason)
	}
	if resp.Usage != want.Usage {
		t.Errorf("Usage = %+v, want %+v", resp.Usage, want.Usage)
	}
	if resp.Model != want.Model {
		t.Errorf("Model = %q, want %q", resp.Model, want.Model)
	}
	CheckToolCalls(t, resp.ToolCalls, want.ToolCalls)
	return resp
}

// CheckToolCalls checks that got are the calls of want, in order, with
// their IDs, names and arguments to the byte.
func CheckToolCalls(t testing.TB, got, want []cairn.ToolCall) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("ToolCalls = %+v, want %d calls", got, len(want))
	}
	for i, c := range got {
		if c.ID != want[i].ID || c.Name != want[i].Name || string(c.Args) != string(want[i].Args) {
			t.Errorf("ToolCalls[%d] = {%s %s %s}, want {%s %s %s}", i, c.ID, c.Name, c.Args, want[i].ID, want[i].Name, want[i].Args)
		}
	}
}

// Summary is the compaction summary that SummaryRequest folds in.
var Summary = cairn.Message{Seq: 9, Role: cairn.RoleSystem, Name: cairn.SummaryName, Content: "The user is Ada."}

// SummaryRequest is a summary request of Summary and a calc call that a
// chat model is sent as provider.SummaryPrompt; its tool must not be
// offered.
func SummaryRequest() *provider.Request {
	return &provider.Request{
		Purpose:       provider.PurposeSummary,
		SummaryTokens: 400,
		Messages: []cairn.Message{
			Summary,
			{Seq: 10, Role: cairn.RoleUser, Content: "What is 2*(3+4)?"},
			{Seq: 11, Role: cairn.RoleAssistant, ToolCalls: []cairn.ToolCall{{ID: "call_1", Name: "calc", Args: json.RawMessage(`{"expression":"2*(3+4)"}`)}}},
			{Seq: 12, Role: cairn.RoleTool, ToolCallID: "call_1", Name: "calc", Content: "14"},
		},
		Tools: []provider.Tool{{Name: "calc"}},
	}
}

// CheckSummaryInput checks the user message a model was sent for
// SummaryRequest: the earlier summary, then a transcript of the rest.
func CheckSummaryInput(t testing.TB, text string) {
	t.Helper()
	for _, want := range []string{"<earlier_summary>\nThe user is Ada.\n</earlier_summary>", "[user]: What is 2*(3+4)?",
		`[assistant calls calc, call call_1]: {"expression":"2*(3+4)"}`, "[tool calc result, call call_1]: 14"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary input lacks %q:\n%s", want, text)
		}
	}
}

// Conversation is how the conversation that the adapters' request tests
// send begins: instructions, a user message with a PNG image of bytes
// 1, 2, 3, an assistant's calls call_1 (calc) and call_2 (clock), their
// results (the second an error), the assistant's reply, and more
// instructions (seq 1 to 7).
func Conversation() []cairn.Message {
	return []cairn.Message{
		{Seq: 1, Role: cairn.RoleSystem, Content: "You are terse."},
		{Seq: 2, Role: cairn.RoleUser, Content: "What is 2*(3+4)? And the time?", Parts: []cairn.Part{{Type: "image", MIME: "image/png", Data: []byte{1, 2, 3}}}},
		{Seq: 3, Role: cairn.RoleAssistant, Content: "Let me check.", ToolCalls: []cairn.ToolCall{
			{ID: "call_1", Name: "calc", Args: json.RawMessage(`{"expression":"2*(3+4)"}`)},
			{ID: "call_2", Name: "clock", Args: json.RawMessage(`{}`)},
		}},
		{Seq: 4, Role: cairn.RoleTool, ToolCallID: "call_1", Name: "calc", Content: "14"},
		{Seq: 5, Role: cairn.RoleTool, ToolCallID: "call_2", Name: "clock", Content: "clock unavailable", IsError: true},
		{Seq: 6, Role: cairn.RoleAssistant, Content: "14; the clock failed."},
		{Seq: 7, Role: cairn.RoleSystem, Content: "Answer in French."},
	}
}

// Tools are the tools the adapters' request tests offer: calc, with a
// description and a schema that allows no other property; clock, with an
// empty object schema; noop, with no schema.
func Tools() []provider.Tool {
	return []provider.Tool{
		{Name: "calc", Description: "Evaluates arithmetic.", Schema: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string","maxLength":200}},"required":["expression"],"additionalProperties":false}`)},
		{Name: "clock", Schema: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: "noop"},
	}
}
