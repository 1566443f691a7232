package anthropic

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
		cfg.Model = "claude-test"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = "sk-ant-test"
	}
	cfg.BaseURL = s.URL
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// sentKey is the API key a request carries. The SDK sends it as a bearer
// token (earlier versions used x-api-key; either will do).
func sentKey(h http.Header) string {
	if k := h.Get("X-Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
}

func TestModel_ID(t *testing.T) {
	m, err := New(Config{Model: "claude-sonnet-4-5", APIKey: "sk-ant-test"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.ID(), "anthropic:claude-sonnet-4-5"; got != want {
		t.Errorf("ID() = %q, want %q", got, want)
	}
}

func TestModel_GenerateText(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, messageStart(25), textStart(0), ping,
			textDelta(0, "Hel"), textDelta(0, "lo, "), textDelta(0, "world"),
			blockStop(0), messageDelta("end_turn", 15), messageStop)
	})
	m := newModel(t, s, Config{})
	providertest.CheckStream(t, m, []string{"Hel", "lo, ", "world"}, provider.Response{
		Text:         "Hello, world",
		FinishReason: "stop", // from end_turn
		Usage:        cairn.Usage{InputTokens: 25, OutputTokens: 15},
		Model:        "claude-test",
	})
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/messages" {
		t.Fatalf("server got %d requests, want 1 to /v1/messages", len(reqs))
	}
	if got := sentKey(reqs[0].Header); got != "sk-ant-test" {
		t.Errorf("key sent = %q, want sk-ant-test", got)
	}
	if reqs[0].Header.Get("Anthropic-Version") == "" {
		t.Error("request has no anthropic-version header")
	}
	if got := string(reqs[0].Object(t)["max_tokens"]); got != "4096" {
		t.Errorf("max_tokens = %s, want the default 4096", got)
	}
}

func TestModel_GenerateToolCalls(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, messageStart(400),
			textStart(0), textDelta(0, "Let me compute."), blockStop(0),
			toolStart(1, "toolu_01A", "calc"),
			inputDelta(1, ""), inputDelta(1, `{"expr`), inputDelta(1, `ession": "2*(3`), inputDelta(1, `+4)"}`),
			blockStop(1),
			toolStart(2, "toolu_01B", "remember"),
			inputDelta(2, `{"key": "k", `), inputDelta(2, `"value": [1, 2]}`),
			blockStop(2),
			toolStart(3, "toolu_01C", "clock"), blockStop(3),
			messageDelta("tool_use", 89), messageStop)
	})
	m := newModel(t, s, Config{})
	providertest.CheckStream(t, m, []string{"Let me compute."}, provider.Response{
		Text:         "Let me compute.",
		FinishReason: "tool_calls", // from tool_use
		Usage:        cairn.Usage{InputTokens: 400, OutputTokens: 89},
		Model:        "claude-test",
		ToolCalls: []cairn.ToolCall{
			{ID: "toolu_01A", Name: "calc", Args: json.RawMessage(`{"expression": "2*(3+4)"}`)},
			{ID: "toolu_01B", Name: "remember", Args: json.RawMessage(`{"key": "k", "value": [1, 2]}`)},
			{ID: "toolu_01C", Name: "clock", Args: json.RawMessage(`{}`)},
		},
	})
}

func TestModel_GenerateMalformedInput(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, messageStart(10),
			toolStart(0, "toolu_01A", "calc"), inputDelta(0, `{"expression": "2*`), blockStop(0),
			messageDelta("max_tokens", 5), messageStop)
	})
	m := newModel(t, s, Config{})
	resp, err := m.Generate(t.Context(), providertest.UserRequest("compute"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(resp.ToolCalls) != 1 {
		t.Fatalf("ToolCalls = %+v, want 1", resp.ToolCalls)
	}
	var text string
	if err := json.Unmarshal(resp.ToolCalls[0].Args, &text); err != nil || text != `{"expression": "2*` {
		t.Errorf("malformed Args = %s, want the JSON string of the input sent (err %v)", resp.ToolCalls[0].Args, err)
	}
	if resp.FinishReason != "length" {
		t.Errorf("FinishReason = %q, want length (from max_tokens)", resp.FinishReason)
	}
}

func TestFinishReason(t *testing.T) {
	for stop, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
		"model_context_window_exceeded": "length", "refusal": "content_filter", "pause_turn": "pause_turn",
	} {
		if got := finishReason(stop); got != want {
			t.Errorf("finishReason(%q) = %q, want %q", stop, got, want)
		}
	}
}

func TestModel_GenerateRequest(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, messageStart(1), textStart(0), textDelta(0, "De rien."), blockStop(0), messageDelta("end_turn", 3), messageStop)
	})
	m := newModel(t, s, Config{Model: "claude-sonnet-4-5", MaxTokens: 256})
	// providertest.Conversation, then a user message, a call whose ID the API
	// would refuse and whose arguments the model sent malformed, its error
	// result, and a user message that joins it.
	req := &provider.Request{
		Messages: append(providertest.Conversation(),
			cairn.Message{Seq: 8, Role: cairn.RoleUser, Content: "Encore?"},
			cairn.Message{Seq: 9, Role: cairn.RoleAssistant, ToolCalls: []cairn.ToolCall{{ID: "call.3", Name: "calc", Args: json.RawMessage(`"{\"expression\": \"2*"`)}}},
			cairn.Message{Seq: 10, Role: cairn.RoleTool, ToolCallID: "call.3", Name: "calc", Content: "arguments are not valid JSON", IsError: true},
			cairn.Message{Seq: 11, Role: cairn.RoleUser, Content: "Merci"},
		),
		Tools: providertest.Tools(),
	}
	providertest.CheckBody(t, s.Send(t, m, req), map[string]string{
		"model":      `"claude-sonnet-4-5"`,
		"max_tokens": `256`,
		"stream":     `true`,
		"system":     `[{"type":"text","text":"You are terse."},{"type":"text","text":"Answer in French."}]`,
		"messages": `[
			{"role":"user","content":[
				{"type":"text","text":"What is 2*(3+4)? And the time?"},
				{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AQID"}}]},
			{"role":"assistant","content":[
				{"type":"text","text":"Let me check."},
				{"type":"tool_use","id":"call_1","name":"calc","input":{"expression":"2*(3+4)"}},
				{"type":"tool_use","id":"call_2","name":"clock","input":{}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"14"}]},
				{"type":"tool_result","tool_use_id":"call_2","is_error":true,"content":[{"type":"text","text":"clock unavailable"}]}]},
			{"role":"assistant","content":[{"type":"text","text":"14; the clock failed."}]},
			{"role":"user","content":[{"type":"text","text":"Encore?"}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"call_3","name":"calc","input":{}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"call_3","is_error":true,"content":[{"type":"text","text":"arguments are not valid JSON"}]},
				{"type":"text","text":"Merci"}]}]`,
		"tools": `[
			{"name":"calc","description":"Evaluates arithmetic.",
				"input_schema":{"type":"object","properties":{"expression":{"type":"string","maxLength":200}},"required":["expression"],"additionalProperties":false}},
			{"name":"clock","input_schema":{"type":"object","properties":{}}},
			{"name":"noop","input_schema":{"type":"object","properties":{}}}]`,
	})
}

func TestModel_GenerateRetryAfter(t *testing.T) {
	providertest.RetryAfter(t, api, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
}

func TestModel_GenerateServerErrors(t *testing.T) {
	providertest.ServerErrors(t, api, DefaultMaxRetries, "api_error", "Internal server error", "anthropic claude-test", "req_test")
}

// TestModel_GenerateBackoff lets the SDK's own backoff run once (it is not
// configurable: about half a second).
func TestModel_GenerateBackoff(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeError(w, http.StatusServiceUnavailable, "overloaded_error", "Overloaded", nil)
	})
	m := newModel(t, s, Config{MaxRetries: 1})
	_, err := m.Generate(t.Context(), providertest.UserRequest("Hi"))
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("error %v, want a 503 *StatusError", err)
	}
	if got := len(s.Requests()); got != 2 {
		t.Errorf("server got %d requests, want 2", got)
	}
}

func TestModel_GenerateNoRetries(t *testing.T) {
	providertest.NoRetries(t, api, "overloaded_error", "Overloaded")
}

func TestModel_GenerateUnauthorized(t *testing.T) {
	providertest.Unauthorized(t, api, "authentication_error", "invalid x-api-key")
}

func TestModel_GenerateStreamError(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, messageStart(1), textStart(0), textDelta(0, "Hi"),
			event{Name: "error", Data: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	})
	m := newModel(t, s, Config{})
	_, err := m.Generate(t.Context(), providertest.UserRequest("Hi"))
	var se *StatusError
	if !errors.As(err, &se) || !se.InStream || se.Type != "overloaded_error" {
		t.Fatalf("error %v, want an in-stream overloaded_error *StatusError", err)
	}
	if !strings.Contains(err.Error(), "Overloaded") || strings.Contains(err.Error(), "HTTP 200") {
		t.Errorf("error %q, want the server's message and no HTTP status", err)
	}
}

func TestModel_GenerateTruncated(t *testing.T) {
	providertest.Truncated(t, api, "stop reason")
}

func TestNew_MissingKey(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	_, err := New(Config{Model: "claude-sonnet-4-5"})
	if !errors.Is(err, ErrNoAPIKey) {
		t.Fatalf("New without a key: error %v, want ErrNoAPIKey", err)
	}
	if !strings.Contains(err.Error(), EnvAPIKey) {
		t.Errorf("error %q does not name %s", err, EnvAPIKey)
	}
	if _, err := New(Config{APIKey: "sk-ant-test"}); err == nil || !strings.Contains(err.Error(), "Config.Model") {
		t.Errorf("New without a model: error %v, want one naming Config.Model", err)
	}
}

func TestNew_Environment(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, messageStart(1), messageDelta("end_turn", 1), messageStop)
	})
	t.Setenv(EnvAPIKey, "sk-ant-env")
	t.Setenv(EnvBaseURL, s.URL)
	m, err := New(Config{Model: "claude-test"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := m.Generate(t.Context(), providertest.UserRequest("Hi")); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	if got := sentKey(reqs[0].Header); got != "sk-ant-env" {
		t.Errorf("key sent = %q, want the key from %s", got, EnvAPIKey)
	}
}

func TestModel_GenerateCancel(t *testing.T) {
	providertest.Cancel(t, api)
}

func TestModel_GenerateBadInput(t *testing.T) {
	m, err := New(Config{Model: "claude-test", APIKey: "sk-ant-test", BaseURL: "http://127.0.0.1:1", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	user := []cairn.Message{{Role: cairn.RoleUser, Content: "x"}}
	for name, req := range map[string]*provider.Request{
		"unknown role":   {Messages: []cairn.Message{{Role: "narrator", Content: "x"}}},
		"array schema":   {Messages: user, Tools: []provider.Tool{{Name: "t", Schema: json.RawMessage(`[1]`)}}},
		"string schema":  {Messages: user, Tools: []provider.Tool{{Name: "t", Schema: json.RawMessage(`{"type":"string"}`)}}},
		"bad required":   {Messages: user, Tools: []provider.Tool{{Name: "t", Schema: json.RawMessage(`{"type":"object","required":"a"}`)}}},
		"audio part":     {Messages: []cairn.Message{{Role: cairn.RoleUser, Parts: []cairn.Part{{Type: "audio", Data: []byte{1}}}}}},
		"empty image":    {Messages: []cairn.Message{{Role: cairn.RoleUser, Parts: []cairn.Part{{Type: "image"}}}}},
		"zip file part":  {Messages: []cairn.Message{{Role: cairn.RoleUser, Parts: []cairn.Part{{Type: "file", MIME: "application/zip", Data: []byte{1}}}}}},
		"pdf without it": {Messages: []cairn.Message{{Role: cairn.RoleUser, Parts: []cairn.Part{{Type: "file", MIME: "application/pdf"}}}}},
	} {
		if _, err := m.Generate(t.Context(), req); err == nil {
			t.Errorf("%s: Generate succeeded, want an error", name)
		}
	}
}

// A summary request goes as an ordinary call: the summarization
// instruction as the system prompt, then the earlier summary and a
// transcript; no tools. In a chat call, a compaction's summary joins the
// system prompt, introduced as one.
func TestModel_GenerateSummary(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, messageStart(1), textStart(0), textDelta(0, "The user computed 14."), blockStop(0), messageDelta("end_turn", 3), messageStop)
	})
	m := newModel(t, s, Config{})
	resp, err := m.Generate(t.Context(), providertest.SummaryRequest())
	if err != nil || resp.Text != "The user computed 14." {
		t.Fatalf("Generate = %+v, %v", resp, err)
	}
	got := s.Requests()[0].Object(t)
	var system []struct{ Text string }
	var msgs []struct {
		Role    string
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal(got["system"], &system); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got["messages"], &msgs); err != nil {
		t.Fatal(err)
	}
	var tools []json.RawMessage
	_ = json.Unmarshal(got["tools"], &tools)
	if len(tools) != 0 || len(system) != 1 || len(msgs) != 1 || msgs[0].Role != "user" || len(msgs[0].Content) != 1 {
		t.Fatalf("summary request body %s, want one system block, one user message and no tools", s.Requests()[0].Body)
	}
	if !strings.HasPrefix(system[0].Text, "You compact a long conversation") {
		t.Errorf("instruction %q", system[0].Text)
	}
	providertest.CheckSummaryInput(t, msgs[0].Content[0].Text)

	chat := &provider.Request{Messages: []cairn.Message{{Role: cairn.RoleSystem, Content: "Be terse."}, providertest.Summary, {Role: cairn.RoleUser, Content: "Hi"}}}
	if _, err := m.Generate(t.Context(), chat); err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":"Be terse."},{"type":"text","text":` + strconvQuote(provider.SummaryPreamble+"The user is Ada.") + `}]`
	if g := s.Requests()[1].Object(t)["system"]; !providertest.JSONEqual(t, g, []byte(want)) {
		t.Errorf("chat system %s, want %s", g, want)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A conversation that starts with the assistant after a compaction (the
// cut fell among tool calls) gets a user message first: the API refuses
// one that does not start with the user.
func TestModel_GenerateStartsWithAssistant(t *testing.T) {
	s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		writeSSE(w, messageStart(1), textStart(0), textDelta(0, "Done."), blockStop(0), messageDelta("end_turn", 3), messageStop)
	})
	m := newModel(t, s, Config{})
	req := &provider.Request{Messages: []cairn.Message{
		{Seq: 1, Role: cairn.RoleSystem, Content: "Be terse."},
		{Seq: 9, Role: cairn.RoleSystem, Name: cairn.SummaryName, Content: "The user asked for sums."},
		{Seq: 5, Role: cairn.RoleAssistant, ToolCalls: []cairn.ToolCall{{ID: "call_1", Name: "calc", Args: json.RawMessage(`{}`)}}},
		{Seq: 6, Role: cairn.RoleTool, ToolCallID: "call_1", Name: "calc", Content: "3"},
	}}
	if _, err := m.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":[{"type":"text","text":"(The conversation continues from the summary above.)"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"calc","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"3"}]}]}]`
	if got := s.Requests()[0].Object(t)["messages"]; !providertest.JSONEqual(t, got, []byte(want)) {
		t.Errorf("messages\n got %s\nwant %s", got, want)
	}
}
