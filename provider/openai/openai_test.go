package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
)

func newModel(t *testing.T, s *server, cfg Config) *Model {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = "sk-test"
	}
	cfg.BaseURL = s.URL + "/v1"
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func userRequest(text string) *provider.Request {
	return &provider.Request{Messages: []cairn.Message{{Role: cairn.RoleUser, Content: text}}}
}

func TestModel_ID(t *testing.T) {
	m, err := New(Config{Model: "gpt-4o-mini", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.ID(), "openai:gpt-4o-mini"; got != want {
		t.Errorf("ID() = %q, want %q", got, want)
	}
}

func TestModel_GenerateText(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, true,
			chunk(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`),
			textChunk("Hel"), textChunk("lo, "), textChunk("world"),
			finishChunk("stop"), usageChunk(12, 3))
	})
	m := newModel(t, s, Config{})
	var deltas []string
	req := userRequest("Hi")
	req.OnText = func(d string) { deltas = append(deltas, d) }
	resp, err := m.Generate(t.Context(), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if want := []string{"Hel", "lo, ", "world"}; !slices.Equal(deltas, want) {
		t.Errorf("OnText got %q, want %q", deltas, want)
	}
	if resp.Text != "Hello, world" {
		t.Errorf("Text = %q, want %q", resp.Text, "Hello, world")
	}
	if resp.FinishReason != "stop" {
		t.Errorf("FinishReason = %q, want stop", resp.FinishReason)
	}
	if want := (cairn.Usage{InputTokens: 12, OutputTokens: 3}); resp.Usage != want {
		t.Errorf("Usage = %+v, want %+v", resp.Usage, want)
	}
	if resp.Model != "gpt-test" {
		t.Errorf("Model = %q, want gpt-test", resp.Model)
	}
	if len(resp.ToolCalls) != 0 {
		t.Errorf("ToolCalls = %+v, want none", resp.ToolCalls)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" {
		t.Fatalf("server got %d requests (first path %q), want 1 to /v1/chat/completions", len(reqs), reqs[0].Path)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q, want %q", got, "Bearer sk-test")
	}
}

func TestModel_GenerateToolCalls(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, true,
			chunk(`[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"calc","arguments":""}}]},"finish_reason":null}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"expr"}}]},"finish_reason":null}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ession\": \"2*(3"}}]},"finish_reason":null}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"+4)\"}"}}]},"finish_reason":null}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_def","type":"function","function":{"name":"remember","arguments":"{\"key\":"}}]},"finish_reason":null}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":" \"k\", \"value\": [1, 2]}"}}]},"finish_reason":null}]`),
			finishChunk("tool_calls"), usageChunk(40, 22))
	})
	m := newModel(t, s, Config{})
	resp, err := m.Generate(t.Context(), userRequest("compute"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	want := []cairn.ToolCall{
		{ID: "call_abc", Name: "calc", Args: json.RawMessage(`{"expression": "2*(3+4)"}`)},
		{ID: "call_def", Name: "remember", Args: json.RawMessage(`{"key": "k", "value": [1, 2]}`)},
	}
	if len(resp.ToolCalls) != len(want) {
		t.Fatalf("ToolCalls = %+v, want %d calls", resp.ToolCalls, len(want))
	}
	for i, c := range resp.ToolCalls {
		if c.ID != want[i].ID || c.Name != want[i].Name || string(c.Args) != string(want[i].Args) {
			t.Errorf("ToolCalls[%d] = {%s %s %s}, want {%s %s %s}", i, c.ID, c.Name, c.Args, want[i].ID, want[i].Name, want[i].Args)
		}
	}
	if resp.FinishReason != "tool_calls" {
		t.Errorf("FinishReason = %q, want tool_calls", resp.FinishReason)
	}
	if want := (cairn.Usage{InputTokens: 40, OutputTokens: 22}); resp.Usage != want {
		t.Errorf("Usage = %+v, want %+v", resp.Usage, want)
	}
	if resp.Text != "" {
		t.Errorf("Text = %q, want empty", resp.Text)
	}
}

// TestModel_GenerateArguments covers what compatible servers send: malformed
// and empty arguments, a call without an ID, and "stop" ending a turn that
// calls tools.
func TestModel_GenerateArguments(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, true,
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"calc","arguments":"{\"expression\": \"2*"}}]},"finish_reason":null}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":1,"type":"function","function":{"name":"clock","arguments":""}}]},"finish_reason":null}]`),
			finishChunk("stop"))
	})
	m := newModel(t, s, Config{})
	resp, err := m.Generate(t.Context(), userRequest("compute"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(resp.ToolCalls) != 2 {
		t.Fatalf("ToolCalls = %+v, want 2", resp.ToolCalls)
	}
	bad := resp.ToolCalls[0]
	var text string
	if err := json.Unmarshal(bad.Args, &text); err != nil || text != `{"expression": "2*` {
		t.Errorf("malformed Args = %s, want the JSON string of the text sent (err %v)", bad.Args, err)
	}
	var args struct{ Expression string }
	if err := json.Unmarshal(bad.Args, &args); err == nil {
		t.Errorf("decoding malformed Args into an object succeeded; want an error")
	}
	empty := resp.ToolCalls[1]
	if string(empty.Args) != "{}" {
		t.Errorf("empty Args = %s, want {}", empty.Args)
	}
	if !strings.HasPrefix(empty.ID, "call_") || empty.ID == "call_" {
		t.Errorf("ID of a call sent without one = %q, want a made-up call_ ID", empty.ID)
	}
	if resp.FinishReason != "tool_calls" {
		t.Errorf("FinishReason = %q, want tool_calls", resp.FinishReason)
	}
	for i, c := range resp.ToolCalls {
		if !json.Valid(c.Args) {
			t.Errorf("ToolCalls[%d].Args = %s, not valid JSON", i, c.Args)
		}
	}
}

func TestModel_GenerateRequest(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, true, textChunk("De rien."), finishChunk("stop"), usageChunk(1, 1))
	})
	m := newModel(t, s, Config{Model: "gpt-4o-mini", MaxTokens: 256})
	req := &provider.Request{
		Messages: []cairn.Message{
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
			{Seq: 8, Role: cairn.RoleAssistant, ToolCalls: []cairn.ToolCall{{ID: "call_3", Name: "calc", Args: json.RawMessage(`"{\"expression\": \"2*"`)}}},
			{Seq: 9, Role: cairn.RoleTool, ToolCallID: "call_3", Name: "calc", Content: "error: arguments are not valid JSON", IsError: true},
			{Seq: 10, Role: cairn.RoleUser, Content: "Merci"},
		},
		Tools: []provider.Tool{
			{Name: "calc", Description: "Evaluates arithmetic.", Schema: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string","maxLength":200}},"required":["expression"],"additionalProperties":false}`)},
			{Name: "clock", Schema: json.RawMessage(`{"type":"object","properties":{}}`)},
			{Name: "noop"},
		},
	}
	if _, err := m.Generate(t.Context(), req); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatalf("request body %s: %v", reqs[0].Body, err)
	}
	want := map[string]string{
		"model":                 `"gpt-4o-mini"`,
		"stream":                `true`,
		"stream_options":        `{"include_usage":true}`,
		"max_completion_tokens": `256`,
		"messages": `[
			{"role":"system","content":"You are terse."},
			{"role":"user","content":[
				{"type":"text","text":"What is 2*(3+4)? And the time?"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,AQID"}}]},
			{"role":"assistant","content":"Let me check.","tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"calc","arguments":"{\"expression\":\"2*(3+4)\"}"}},
				{"id":"call_2","type":"function","function":{"name":"clock","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"14"},
			{"role":"tool","tool_call_id":"call_2","content":"error: clock unavailable"},
			{"role":"assistant","content":"14; the clock failed."},
			{"role":"system","content":"Answer in French."},
			{"role":"assistant","tool_calls":[
				{"id":"call_3","type":"function","function":{"name":"calc","arguments":"{\"expression\": \"2*"}}]},
			{"role":"tool","tool_call_id":"call_3","content":"error: arguments are not valid JSON"},
			{"role":"user","content":"Merci"}]`,
		"tools": `[
			{"type":"function","function":{"name":"calc","description":"Evaluates arithmetic.",
				"parameters":{"type":"object","properties":{"expression":{"type":"string","maxLength":200}},"required":["expression"],"additionalProperties":false}}},
			{"type":"function","function":{"name":"clock","parameters":{"type":"object","properties":{}}}},
			{"type":"function","function":{"name":"noop","parameters":{"type":"object","properties":{}}}}]`,
	}
	for key, w := range want {
		got, ok := body[key]
		if !ok {
			t.Errorf("request body has no %q: %s", key, reqs[0].Body)
			continue
		}
		if !jsonEqual(t, got, []byte(w)) {
			t.Errorf("request %s:\n got %s\nwant %s", key, got, w)
		}
	}
}

func TestModel_GenerateRetryAfter(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		if n == 0 {
			writeError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "Rate limit reached", map[string]string{"Retry-After": "1"})
			return
		}
		writeSSE(w, true, textChunk("ok"), finishChunk("stop"))
	})
	m := newModel(t, s, Config{})
	resp, err := m.Generate(t.Context(), userRequest("Hi"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Text != "ok" {
		t.Errorf("Text = %q, want ok", resp.Text)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2 (one retry)", len(reqs))
	}
	if gap := reqs[1].At.Sub(reqs[0].At); gap < time.Second {
		t.Errorf("retry came %v after the 429, want at least the Retry-After of 1s", gap)
	}
}

func TestModel_GenerateServerErrors(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeError(w, http.StatusInternalServerError, "server_error", "The server had an error", map[string]string{"Retry-After": "0"})
	})
	m := newModel(t, s, Config{})
	_, err := m.Generate(t.Context(), userRequest("Hi"))
	if err == nil {
		t.Fatal("Generate succeeded against a failing server")
	}
	if got, want := len(s.Requests()), 1+DefaultMaxRetries; got != want {
		t.Errorf("server got %d requests, want %d (1 + %d retries)", got, want, DefaultMaxRetries)
	}
	var se *StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *StatusError", err)
	}
	if se.StatusCode != 500 || se.Message != "The server had an error" || se.Attempts != 1+DefaultMaxRetries {
		t.Errorf("StatusError = %+v, want status 500, the server's message, %d attempts", se, 1+DefaultMaxRetries)
	}
	for _, part := range []string{"openai gpt-test", "500", "The server had an error", "4 attempts"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not contain %q", err, part)
		}
	}
}

func TestModel_GenerateNoRetries(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeError(w, http.StatusServiceUnavailable, "", "overloaded", nil)
	})
	m := newModel(t, s, Config{MaxRetries: -1})
	if _, err := m.Generate(t.Context(), userRequest("Hi")); err == nil {
		t.Fatal("Generate succeeded against a failing server")
	}
	if got := len(s.Requests()); got != 1 {
		t.Errorf("server got %d requests with retries off, want 1", got)
	}
}

func TestModel_GenerateUnauthorized(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeError(w, http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided: sk-test.", nil)
	})
	m := newModel(t, s, Config{})
	_, err := m.Generate(t.Context(), userRequest("Hi"))
	var se *StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *StatusError", err)
	}
	if se.StatusCode != http.StatusUnauthorized || se.Type != "invalid_api_key" {
		t.Errorf("StatusError = %+v, want 401 invalid_api_key", se)
	}
	if !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Incorrect API key provided") {
		t.Errorf("error %q does not name the status and the server's message", err)
	}
	if got := len(s.Requests()); got != 1 {
		t.Errorf("server got %d requests, want 1 (no retry on 401)", got)
	}
}

func TestNew_MissingKey(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvBaseURL, "")
	for _, base := range []string{"", "https://api.openai.com/v1"} {
		_, err := New(Config{Model: "gpt-4o-mini", BaseURL: base})
		if !errors.Is(err, ErrNoAPIKey) {
			t.Errorf("New with base URL %q and no key: error %v, want ErrNoAPIKey", base, err)
			continue
		}
		if !strings.Contains(err.Error(), EnvAPIKey) {
			t.Errorf("error %q does not name %s", err, EnvAPIKey)
		}
	}
	if _, err := New(Config{APIKey: "sk-test"}); err == nil || !strings.Contains(err.Error(), "Config.Model") {
		t.Errorf("New without a model: error %v, want one naming Config.Model", err)
	}
}

// TestNew_Environment checks that OPENAI_BASE_URL and OPENAI_API_KEY are
// used when Config leaves them empty, and that a compatible server needs no
// key.
func TestNew_Environment(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, true, textChunk("ok"), finishChunk("stop"))
	})
	t.Setenv(EnvBaseURL, s.URL+"/v1")
	t.Setenv(EnvAPIKey, "sk-env")
	m, err := New(Config{Model: "llama3.2"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := m.Generate(t.Context(), userRequest("Hi")); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	t.Setenv(EnvAPIKey, "")
	m, err = New(Config{Model: "llama3.2"})
	if err != nil {
		t.Fatalf("New for a compatible server without a key: %v", err)
	}
	if _, err := m.Generate(t.Context(), userRequest("Hi")); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2", len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-env" {
		t.Errorf("Authorization = %q, want the key from %s", got, EnvAPIKey)
	}
	if got := reqs[1].Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization without a key = %q, want none", got)
	}
}

func TestModel_GenerateCancel(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, done <-chan struct{}) {
		writeSSE(w, false, textChunk("partial"))
		select { // hold the stream open until the client goes away
		case <-r.Context().Done():
		case <-done:
		}
	})
	m := newModel(t, s, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := userRequest("Hi")
	req.OnText = func(string) { cancel() }
	errc := make(chan error, 1)
	go func() {
		_, err := m.Generate(ctx, req)
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Generate after cancel: error %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Generate did not return after its context was cancelled mid-stream")
	}
	if got := len(s.Requests()); got != 1 {
		t.Errorf("server got %d requests, want 1 (no retry after cancel)", got)
	}
}

func TestModel_GenerateTruncated(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, false, textChunk("Half an ans"))
	})
	m := newModel(t, s, Config{})
	_, err := m.Generate(t.Context(), userRequest("Hi"))
	if err == nil || !strings.Contains(err.Error(), "finish reason") {
		t.Errorf("Generate on a stream cut short: error %v, want one about the missing finish reason", err)
	}
}

func TestModel_GenerateStreamError(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, false, textChunk("Hi"), `{"error":{"message":"model overloaded","type":"server_error"}}`)
	})
	m := newModel(t, s, Config{})
	_, err := m.Generate(t.Context(), userRequest("Hi"))
	if err == nil || !strings.Contains(err.Error(), "model overloaded") {
		t.Errorf("Generate on a stream that reports an error: %v, want the server's message", err)
	}
}

func TestModel_GenerateBadInput(t *testing.T) {
	m, err := New(Config{Model: "gpt-test", APIKey: "sk-test", BaseURL: "http://127.0.0.1:1/v1", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]*provider.Request{
		"unknown role": {Messages: []cairn.Message{{Role: "narrator", Content: "x"}}},
		"bad schema":   {Messages: []cairn.Message{{Role: cairn.RoleUser, Content: "x"}}, Tools: []provider.Tool{{Name: "t", Schema: json.RawMessage(`[1]`)}}},
		"audio part":   {Messages: []cairn.Message{{Role: cairn.RoleUser, Parts: []cairn.Part{{Type: "audio", Data: []byte{1}}}}}},
	} {
		if _, err := m.Generate(t.Context(), req); err == nil {
			t.Errorf("%s: Generate succeeded, want an error", name)
		}
	}
}

// A summary request goes as an ordinary chat call: the summarization
// instruction, then the earlier summary and a transcript; no tools. In a
// chat call, a compaction's summary is introduced as one.
func TestModel_GenerateSummary(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, true, textChunk("The user computed 14."), finishChunk("stop"), usageChunk(40, 6))
	})
	m := newModel(t, s, Config{})
	summary := cairn.Message{Seq: 9, Role: cairn.RoleSystem, Name: cairn.SummaryName, Content: "The user is Ada."}
	req := &provider.Request{
		Purpose:       provider.PurposeSummary,
		SummaryTokens: 400,
		Messages: []cairn.Message{
			summary,
			{Seq: 10, Role: cairn.RoleUser, Content: "What is 2*(3+4)?"},
			{Seq: 11, Role: cairn.RoleAssistant, ToolCalls: []cairn.ToolCall{{ID: "call_1", Name: "calc", Args: json.RawMessage(`{"expression":"2*(3+4)"}`)}}},
			{Seq: 12, Role: cairn.RoleTool, ToolCallID: "call_1", Name: "calc", Content: "14"},
		},
		Tools: []provider.Tool{{Name: "calc"}},
	}
	resp, err := m.Generate(t.Context(), req)
	if err != nil || resp.Text != "The user computed 14." {
		t.Fatalf("Generate = %+v, %v", resp, err)
	}
	var body struct {
		Messages []struct{ Role, Content string }
		Tools    []json.RawMessage
	}
	if err := json.Unmarshal(s.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Tools) != 0 || len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[1].Role != "user" {
		t.Fatalf("summary request body %s, want a system and a user message and no tools", s.Requests()[0].Body)
	}
	if !strings.HasPrefix(body.Messages[0].Content, "You compact a long conversation") || !strings.Contains(body.Messages[0].Content, "at most about 300 words") {
		t.Errorf("instruction %q", body.Messages[0].Content)
	}
	for _, want := range []string{"<earlier_summary>\nThe user is Ada.\n</earlier_summary>", "[user]: What is 2*(3+4)?",
		`[assistant calls calc, call call_1]: {"expression":"2*(3+4)"}`, "[tool calc result, call call_1]: 14"} {
		if !strings.Contains(body.Messages[1].Content, want) {
			t.Errorf("summary input lacks %q:\n%s", want, body.Messages[1].Content)
		}
	}

	chat := &provider.Request{Messages: []cairn.Message{{Role: cairn.RoleSystem, Content: "Be terse."}, summary, {Role: cairn.RoleUser, Content: "Hi"}}}
	if _, err := m.Generate(t.Context(), chat); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(s.Requests()[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	if got, want := body.Messages[1].Content, provider.SummaryPreamble+"The user is Ada."; got != want || body.Messages[0].Content != "Be terse." {
		t.Errorf("chat system messages %q, %q; want the instructions, then %q", body.Messages[0].Content, got, want)
	}
}
