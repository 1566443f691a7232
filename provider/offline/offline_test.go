package offline_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/offline"
	"github.com/cairnhq/cairn/store/memory"
)

func tools() []provider.Tool {
	var out []provider.Tool
	for _, t := range builtin.Tools() {
		out = append(out, provider.Tool{Name: t.Name(), Schema: t.Schema()})
	}
	return out
}

func user(text string) cairn.Message { return cairn.Message{Role: cairn.RoleUser, Content: text} }

func TestModel_Generate(t *testing.T) {
	m := offline.New()
	if m.ID() != "offline" {
		t.Errorf("id %q", m.ID())
	}
	req := &provider.Request{Messages: []cairn.Message{
		{Role: cairn.RoleSystem, Content: "Be brief."}, user("I am Ada"),
		{Role: cairn.RoleAssistant, Content: "hi"}, user("Who am I?"),
	}, Variables: map[string]json.RawMessage{"b": json.RawMessage(`2`), "a": json.RawMessage(`"x"`)}}
	var streamed strings.Builder
	req.OnText = func(d string) { streamed.WriteString(d) }
	resp, err := m.Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := `Turn 2. You said "Who am I?". Before that you told me "I am Ada". I remember a="x", b=2.`
	if resp.Text != want || streamed.String() != want || resp.FinishReason != "stop" {
		t.Errorf("got %q (streamed %q), want %q", resp.Text, streamed.String(), want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.Generate(ctx, req); err == nil {
		t.Errorf("a cancelled call succeeded")
	}
}

// The same history always gives the same answer.
func TestModel_Deterministic(t *testing.T) {
	m := offline.New()
	mk := func() *provider.Request {
		return &provider.Request{Messages: []cairn.Message{user("calc 1+2; remember k=[1,2]; recall k; time; append hi there to f.txt")}, Tools: tools(), Responses: 3}
	}
	first, err := m.Generate(t.Context(), mk())
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, _ := offline.New().Generate(t.Context(), mk())
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("answers differ:\n%+v\n%+v", first, again)
		}
	}
	var got []string
	for _, c := range first.ToolCalls {
		got = append(got, c.ID+" "+c.Name+" "+string(c.Args))
	}
	want := []string{
		`call_3_0 calc {"expression":"1+2"}`,
		`call_3_1 remember {"key":"k","value":[1,2]}`,
		`call_3_2 recall {"key":"k"}`,
		`call_3_3 clock {}`,
		`call_3_4 append_file {"line":"hi there","path":"f.txt"}`,
	}
	if !reflect.DeepEqual(got, want) || first.FinishReason != "tool_calls" {
		t.Errorf("calls\n got %v\nwant %v", got, want)
	}
	// Without the tools on offer, it answers in words.
	resp, _ := m.Generate(t.Context(), &provider.Request{Messages: []cairn.Message{user("calc 1+2")}})
	if len(resp.ToolCalls) != 0 || resp.Text == "" {
		t.Errorf("no tools offered: %+v", resp)
	}
}

// Through an agent: the tool calls run and the answer reports them.
func TestModel_WithAgent(t *testing.T) {
	st, _ := memory.New(cairn.StoreOptions{})
	a := &agent.Agent{Model: offline.New(), Tools: builtin.Tools(), Store: st}
	s, _ := a.Start(t.Context())
	res, err := s.Run(t.Context(), "calc 2*(3+4); remember color=blue")
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "2*(3+4) = 14. OK, I will remember color." {
		t.Errorf("got %q", res.Output)
	}
	res, _ = s.Run(t.Context(), "recall color", agent.Continue())
	if res.Output != `color is "blue".` {
		t.Errorf("got %q", res.Output)
	}
	res, _ = s.Run(t.Context(), "calc 1/0", agent.Continue())
	if !strings.HasPrefix(res.Output, "calc failed: ") || !strings.Contains(res.Output, "division by zero") {
		t.Errorf("got %q", res.Output)
	}
}

// Asked for a summary, the offline model writes a digest and streams
// nothing; its turn count goes on from the digest; its usage is the
// estimate of the request and of its answer.
func TestModel_Summary(t *testing.T) {
	m := offline.New()
	req := &provider.Request{Purpose: provider.PurposeSummary, Messages: []cairn.Message{
		user("I am Ada"), {Role: cairn.RoleAssistant, Content: "Hello Ada."}, user("I like tea"), {Role: cairn.RoleAssistant, Content: "Noted."},
	}, OnText: func(string) { t.Error("a summary was streamed") }}
	resp, err := m.Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != provider.Digest(req) || !strings.HasPrefix(resp.Text, "Summary of 4 earlier messages (turns 1-2).") {
		t.Errorf("summary %q", resp.Text)
	}
	if resp.Usage.InputTokens != int64(provider.EstimateTokens(req)) {
		t.Errorf("input tokens %d, want the estimate %d", resp.Usage.InputTokens, provider.EstimateTokens(req))
	}
	chat := &provider.Request{Messages: []cairn.Message{
		{Role: cairn.RoleSystem, Content: "Be brief."},
		{Role: cairn.RoleSystem, Name: cairn.SummaryName, Content: resp.Text},
		user("Who am I?"),
	}, Tools: tools()}
	resp, err = m.Generate(t.Context(), chat)
	if err != nil {
		t.Fatal(err)
	}
	if want := `Turn 3. You said "Who am I?". What came before is summarized.`; resp.Text != want {
		t.Errorf("got %q, want %q", resp.Text, want)
	}
	answer := cairn.Message{Role: cairn.RoleAssistant, Content: resp.Text}
	if resp.Usage.InputTokens != int64(provider.EstimateTokens(chat)) || resp.Usage.OutputTokens != int64(provider.EstimateMessageTokens(answer)) {
		t.Errorf("usage %+v, want the estimates %d and %d", resp.Usage, provider.EstimateTokens(chat), provider.EstimateMessageTokens(answer))
	}
}
