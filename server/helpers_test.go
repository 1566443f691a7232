package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/sqlite"
)

// testToken is the access token of the test servers.
const testToken = "test-token-0123456789abcdef"

// harness is a Server on a store, served by an httptest server.
type harness struct {
	t     testing.TB
	srv   *Server
	ts    *httptest.Server
	store cairn.Store
	token string
}

// newHarness serves store with cfg (Store and Tokens filled in).
func newHarness(t testing.TB, store cairn.Store, cfg Config) *harness {
	t.Helper()
	cfg.Store = store
	if cfg.Tokens == nil {
		cfg.Tokens = []string{testToken}
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		ts.Close()
	})
	return &harness{t: t, srv: srv, ts: ts, store: store, token: cfg.Tokens[0]}
}

// longTermStore is a long-term memory store of its own, in memory.
func longTermStore(t testing.TB) longterm.Store {
	t.Helper()
	lt, err := memory.NewLongTerm(longterm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lt.Close() })
	return lt
}

func sqliteStore(t testing.TB) cairn.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// response is an answer as a test reads it.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map.
func (r response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.Decode(t, &m)
	return m
}

// Decode decodes the JSON body into v.
func (r response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body is not the JSON %T: %v\n%s", v, err, r.Body)
	}
}

// Err returns the error object of an error answer.
func (r response) Err(t testing.TB) map[string]any {
	t.Helper()
	e, ok := r.JSON(t)["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %s", r.Body)
	}
	return e
}

// do sends a request with the harness's token; body is JSON-encoded
// unless it is a string or []byte.
func (h *harness) do(method, path string, body any) response {
	h.t.Helper()
	return h.doWith(method, path, body, map[string]string{"Authorization": "Bearer " + h.token})
}

func (h *harness) doWith(method, path string, body any, header map[string]string) response {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.ts.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return response{Status: res.StatusCode, Header: res.Header, Body: data}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// wantStatus fails the test unless r has status want.
func wantStatus(t testing.TB, what string, r response, want int) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("%s: status %d, want %d; body: %s", what, r.Status, want, r.Body)
	}
}

// userEvent is an append's message.user event with text.
func userEvent(text string) map[string]any {
	return map[string]any{"kind": "message.user", "run": "r1", "data": map[string]any{"parts": []any{map[string]any{"type": "text", "text": text}}}}
}

// approvalScript is the script of the fixture agent: remember a city,
// ask to append to a file (a call that needs approval), then answer.
func approvalScript(path string) script.Script {
	return script.Script{Steps: []script.Step{
		{ToolCalls: []script.Call{{Name: "remember", Arguments: json.RawMessage(`{"key":"city","value":"Lisbon"}`)}}},
		{Text: "I will note it.", ToolCalls: []script.Call{{Name: "append_file", Arguments: json.RawMessage(fmt.Sprintf(`{"path":%q,"line":"Lisbon"}`, path))}}},
		{Text: "Done: Lisbon is noted."},
	}}
}

// fixtureAgent returns the agent of approvalScript on store, its
// append_file tool waiting for approval.
func fixtureAgent(t testing.TB, path string) func(cairn.Store) (*agent.Agent, error) {
	t.Helper()
	return func(st cairn.Store) (*agent.Agent, error) {
		m, err := script.New(approvalScript(path))
		if err != nil {
			return nil, err
		}
		var tools []*agent.Tool
		for _, tl := range builtin.Tools() {
			if tl.Name() == "append_file" {
				tl = tl.With(agent.RequireApproval())
			}
			tools = append(tools, tl)
		}
		return &agent.Agent{Name: "fixture", Instructions: "Take notes.", Model: m, Tools: tools, Store: st, OnError: agent.Fail}, nil
	}
}

// awaitingSession runs the fixture agent on store until it waits for the
// approval of its append_file call; it returns that call's ID.
func awaitingSession(t testing.TB, store cairn.Store, newAgent func(cairn.Store) (*agent.Agent, error), id string) string {
	t.Helper()
	a, err := newAgent(store)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Start(t.Context(), agent.WithID(id), agent.WithLabels(map[string]string{"team": "travel"}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "Note that I am going to Lisbon")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != cairn.StatusAwaiting || len(res.Awaiting) != 1 {
		t.Fatalf("fixture run: status %s, awaiting %v; want awaiting_approval with one call", res.Status, res.Awaiting)
	}
	return res.Awaiting[0].ID
}

// chatEvents returns n events of a long chat: runs of a user message, a
// model response with a tool call, its result and a variable, so that a
// timeline of them has runs, steps and tools.
func chatEvents(n int) []cairn.Event {
	var out []cairn.Event
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	add := func(kind cairn.Kind, run string, v any) {
		if len(out) >= n {
			return
		}
		e := cairn.MustEvent(kind, run, v)
		e.Seq, e.At = int64(len(out))+1, at.Add(time.Duration(len(out))*time.Second)
		out = append(out, e)
	}
	for turn := 0; len(out) < n; turn++ {
		run := fmt.Sprintf("run-%04d", turn)
		add(cairn.KindRunStarted, run, cairn.RunStarted{RunID: run, Agent: "bench", Model: "script", Fingerprint: cairn.Fingerprint{Model: "script"}})
		add(cairn.KindMessageUser, run, cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: fmt.Sprintf("Turn %d: what is %d*7?", turn, turn)}}})
		call := cairn.ToolCall{ID: fmt.Sprintf("call_%d", turn), Name: "calc", Args: json.RawMessage(fmt.Sprintf(`{"expression":"%d*7"}`, turn))}
		add(cairn.KindModelResponse, run, cairn.ModelResponse{ToolCalls: []cairn.ToolCall{call}, Model: "script", Usage: cairn.Usage{InputTokens: 120, OutputTokens: 12}, FinishReason: "tool_calls", LatencyMS: 40})
		add(cairn.KindToolResult, run, cairn.ToolResult{CallID: call.ID, Name: "calc", Output: fmt.Sprint(turn * 7), DurationMS: 1})
		add(cairn.KindStateSet, run, cairn.StateSet{Set: map[string]json.RawMessage{"last": json.RawMessage(fmt.Sprint(turn * 7))}})
		add(cairn.KindModelResponse, run, cairn.ModelResponse{Text: fmt.Sprintf("%d*7 = %d.", turn, turn*7), Model: "script", Usage: cairn.Usage{InputTokens: 140, OutputTokens: 9}, FinishReason: "stop", LatencyMS: 35})
		add(cairn.KindRunFinished, run, cairn.RunFinished{Status: cairn.StatusCompleted, Output: fmt.Sprintf("%d*7 = %d.", turn, turn*7)})
	}
	return out
}

// writeSession creates session id holding events, in appends of at most
// 1000.
func writeSession(t testing.TB, store cairn.Store, id string, events []cairn.Event) {
	t.Helper()
	if err := store.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(events); i += 1000 {
		end := min(i+1000, len(events))
		if err := store.Append(t.Context(), id, int64(i), events[i:end]...); err != nil {
			t.Fatal(err)
		}
	}
}
