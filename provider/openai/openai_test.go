package openai

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/providertest"
	"github.com/cairnhq/cairn/provider"
)

func newModel(t *testing.T, s *providertest.Server, cfg Config) *Model {
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
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, true,
			chunk(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`),
			textChunk("Hel"), textChunk("lo, "), textChunk("world"),
			finishChunk("stop"), usageChunk(12, 3))
	})
	m := newModel(t, s, Config{})
	providertest.CheckStream(t, m, []string{"Hel", "lo, ", "world"}, provider.Response{
		Text:         "Hello, world",
		FinishReason: "stop",
		Usage:        cairn.Usage{InputTokens: 12, OutputTokens: 3},
		Model:        "gpt-test",
	})
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" {
		t.Fatalf("server got %d requests (first path %q), want 1 to /v1/chat/completions", len(reqs), reqs[0].Path)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q, want %q", got, "Bearer sk-test")
	}
}

func TestModel_GenerateToolCalls(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
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
	providertest.CheckStream(t, m, nil, provider.Response{
		FinishReason: "tool_calls",
		Usage:        cairn.Usage{InputTokens: 40, OutputTokens: 22},
		Model:        "gpt-test",
		ToolCalls: []cairn.ToolCall{
			{ID: "call_abc", Name: "calc", Args: json.RawMessage(`{"expression": "2*(3+4)"}`)},
			{ID: "call_def", Name: "remember", Args: json.RawMessage(`{"key": "k", "value": [1, 2]}`)},
		},
	})
}

// TestModel_GenerateArguments covers what compatible servers send: malformed
// and empty arguments, a call without an ID, and "stop" ending a turn that
// calls tools.
func TestModel_GenerateArguments(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, true,
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"calc","arguments":"{\"expression\": \"2*"}}]},"finish_reason":null}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":1,"type":"function","function":{"name":"clock","arguments":""}}]},"finish_reason":null}]`),
			finishChunk("stop"))
	})
	m := newModel(t, s, Config{})
	resp, err := m.Generate(t.Context(), providertest.UserRequest("compute"))
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
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, true, textChunk("De rien."), finishChunk("stop"), usageChunk(1, 1))
	})
	m := newModel(t, s, Config{Model: "gpt-4o-mini", MaxTokens: 256})
	// providertest.Conversation, then a call whose arguments the model sent
	// malformed, its error result, and a user message.
	req := &provider.Request{
		Messages: append(providertest.Conversation(),
			cairn.Message{Seq: 8, Role: cairn.RoleAssistant, ToolCalls: []cairn.ToolCall{{ID: "call_3", Name: "calc", Args: json.RawMessage(`"{\"expression\": \"2*"`)}}},
			cairn.Message{Seq: 9, Role: cairn.RoleTool, ToolCallID: "call_3", Name: "calc", Content: "error: arguments are not valid JSON", IsError: true},
			cairn.Message{Seq: 10, Role: cairn.RoleUser, Content: "Merci"},
		),
		Tools: providertest.Tools(),
	}
	providertest.CheckBody(t, s.Send(t, m, req), map[string]string{
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
	})
}

func TestModel_GenerateRetryAfter(t *testing.T) {
	providertest.RetryAfter(t, api, "rate_limit_exceeded", "Rate limit reached")
}

func TestModel_GenerateServerErrors(t *testing.T) {
	providertest.ServerErrors(t, api, DefaultMaxRetries, "server_error", "The server had an error", "openai gpt-test")
}

func TestModel_GenerateNoRetries(t *testing.T) {
	providertest.NoRetries(t, api, "", "overloaded")
}

func TestModel_GenerateUnauthorized(t *testing.T) {
	providertest.Unauthorized(t, api, "invalid_api_key", "Incorrect API key provided: sk-test.")
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
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, true, textChunk("ok"), finishChunk("stop"))
	})
	t.Setenv(EnvBaseURL, s.URL+"/v1")
	t.Setenv(EnvAPIKey, "sk-env")
	m, err := New(Config{Model: "llama3.2"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := m.Generate(t.Context(), providertest.UserRequest("Hi")); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	t.Setenv(EnvAPIKey, "")
	m, err = New(Config{Model: "llama3.2"})
	if err != nil {
		t.Fatalf("New for a compatible server without a key: %v", err)
	}
	if _, err := m.Generate(t.Context(), providertest.UserRequest("Hi")); err != nil {
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
	providertest.Cancel(t, api)
}

func TestModel_GenerateTruncated(t *testing.T) {
	providertest.Truncated(t, api, "finish reason")
}

func TestModel_GenerateStreamError(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, false, textChunk("Hi"), `{"error":{"message":"model overloaded","type":"server_error"}}`)
	})
	m := newModel(t, s, Config{})
	_, err := m.Generate(t.Context(), providertest.UserRequest("Hi"))
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
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, true, textChunk("The user computed 14."), finishChunk("stop"), usageChunk(40, 6))
	})
	m := newModel(t, s, Config{})
	resp, err := m.Generate(t.Context(), providertest.SummaryRequest())
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
	providertest.CheckSummaryInput(t, body.Messages[1].Content)

	chat := &provider.Request{Messages: []cairn.Message{{Role: cairn.RoleSystem, Content: "Be terse."}, providertest.Summary, {Role: cairn.RoleUser, Content: "Hi"}}}
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
