package cairn

import (
	"encoding/json"
	"testing"
)

func TestEvent_SearchText(t *testing.T) {
	tests := []struct {
		kind Kind
		v    any
		want string
	}{
		{KindMessageUser, MessageUser{Parts: []Part{{Type: "text", Text: "hello"}, {Type: "image", URL: "http://x/y.png"}, {Type: "text", Text: "there"}}}, "hello there"},
		{KindModelResponse, ModelResponse{Text: "let me add", ToolCalls: []ToolCall{{ID: "c1", Name: "calc", Args: json.RawMessage(`{"expr":"2+2","n":3,"ok":true}`)}}}, "let me add calc expr 2+2 n 3 ok true"},
		{KindToolResult, ToolResult{CallID: "c1", Name: "calc", Output: "4"}, "calc 4"},
		{KindMemoryCompacted, MemoryCompacted{Summary: "they added", UpTo: 3}, "they added"},
		{KindRunFinished, RunFinished{Status: StatusFailed, Output: "x", Error: &ErrorInfo{Code: "model", Message: "rate limited"}}, "rate limited"},
		{KindRunFinished, RunFinished{Status: StatusCompleted, Output: "the answer"}, ""},
		{KindCustom, Custom{Type: "app.step", Payload: json.RawMessage(`["fetch", {"url": "u"}]`)}, "app.step fetch url u"},
		{KindCustom, Custom{Type: "cairn.step", Payload: json.RawMessage(`{"name":"fetch","result":"ok"}`)}, "cairn.step name fetch result ok"},
		{KindCustom, Custom{Type: "cairn.queued", Payload: json.RawMessage(`{"input":"summarise"}`)}, "cairn.queued input summarise"},
		{KindCustom, Custom{Type: "cairn.key", Payload: json.RawMessage(`{"wrapped":"c2VjcmV0"}`)}, ""},
		{KindCustom, Custom{Type: "cairn.trace", Payload: json.RawMessage(`{"traceparent":"00-abc"}`)}, ""},
		{KindMessageSystem, MessageSystem{Text: "You are helpful."}, ""},
		{KindStateSet, StateSet{Set: map[string]json.RawMessage{"k": json.RawMessage(`"v"`)}}, ""},
		// The sealed form (store/crypt) has no clear words of the event's.
		{KindModelResponse, ModelResponse{Text: "cairn1.AbCd1234.bm9uY2UtY2lwaGVy_dGV4dA"}, ""},
		{KindMessageUser, MessageUser{Parts: []Part{{Type: "text", Text: "cairn1.AbCd1234.Zmlyc3Q"}, {Type: "cairn.sealed", Text: "cairn1.AbCd1234.Ym9keQ"}}}, ""},
		// Text that only looks like a token's start is text.
		{KindMessageUser, MessageUser{Parts: []Part{{Type: "text", Text: "cairn1.AbCd1234.not a token"}}}, "cairn1.AbCd1234.not a token"},
	}
	for _, tt := range tests {
		e := MustEvent(tt.kind, "r", tt.v)
		if got := e.SearchText(); got != tt.want {
			t.Errorf("%s %+v: SearchText %q, want %q", tt.kind, tt.v, got, tt.want)
		}
	}
	if got := (Event{Kind: KindMessageUser, Data: json.RawMessage(`{"parts":`)}).SearchText(); got != "" {
		t.Errorf("invalid data: SearchText %q, want \"\"", got)
	}
}
