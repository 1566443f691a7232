package main

import (
	"context"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/store/sqlite"
)

// The sum bench/langgraph/conversation.js gives for 1,000 turns
// (node -e "import('./conversation.js').then(c => console.log(c.conversationSum(1000)))"):
// the two sides make the same texts.
const jsSum1000 = "38bd231743691a6e37bf3dc282b76a12336cc39d2f1dc09511d1debf80017714"

func TestConversationSum_MatchesJS(t *testing.T) {
	if got := conversationSum(1000); got != jsSum1000 {
		t.Errorf("conversationSum(1000) = %s, want %s (conversation.js's)", got, jsSum1000)
	}
}

func TestText(t *testing.T) {
	for _, kind := range []string{"user", "answer", "result"} {
		for _, n := range []int{1, 3, 999999} {
			s := text(kind, n)
			if len(s) != size {
				t.Errorf("text(%s, %d) has %d bytes, want %d", kind, n, len(s), size)
			}
			got, err := turnOf(s)
			if err != nil || got != n {
				t.Errorf("turnOf(text(%s, %d)) = %d, %v", kind, n, got, err)
			}
		}
	}
	if text("user", 4)[12:] == text("answer", 4)[12:] || text("user", 4)[12:] == text("user", 5)[12:] {
		t.Error("the words of different kinds or turns are the same")
	}
	if _, err := turnOf("hello"); err == nil {
		t.Error("turnOf(hello) gave no error")
	}
}

func TestMessagesAfter(t *testing.T) {
	for n, want := range map[int]int{1: 3, 2: 5, 3: 9, 1000: 2667} {
		if got := messagesAfter(n); got != want {
			t.Errorf("messagesAfter(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestModel(t *testing.T) {
	gen := func(msgs ...cairn.Message) *provider.Response {
		t.Helper()
		r, err := model{}.Generate(t.Context(), &provider.Request{Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := gen(cairn.Message{Role: cairn.RoleUser, Content: text("user", 4)}); r.Text != text("answer", 4) || len(r.ToolCalls) != 0 {
		t.Errorf("turn 4: got %.20q with %d calls, want the answer", r.Text, len(r.ToolCalls))
	}
	r := gen(cairn.Message{Role: cairn.RoleUser, Content: text("user", 6)})
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].ID != "call_000006" || string(r.ToolCalls[0].Args) != `{"turn":6}` || r.Text != "" {
		t.Errorf("turn 6: got %+v, want one call of lookup", r)
	}
	if r := gen(cairn.Message{Role: cairn.RoleTool, Content: text("result", 6)}); r.Text != text("answer", 6) {
		t.Errorf("after the result of turn 6: got %.20q, want its answer", r.Text)
	}
	if _, err := (model{}).Generate(t.Context(), &provider.Request{}); err == nil {
		t.Error("no messages: no error")
	}
}

// TestConversation runs six turns on a sqlite store and loads the session
// back as the load command does.
func TestConversation(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/c.db"
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := newAgent(st).Open(ctx, threadID)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 6; n++ {
		res, err := s.Run(ctx, text("user", n), agent.Continue())
		if err != nil || res.Output != text("answer", n) {
			t.Fatalf("turn %d: %v, output %.20q", n, err, res.Output)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	lt, err := load(ctx, options{store: "sqlite", path: path, synchronous: "full", turns: 6})
	if err != nil {
		t.Fatal(err)
	}
	if lt.LoadMS <= 0 {
		t.Errorf("load took %v ms", lt.LoadMS)
	}
	if _, err := load(ctx, options{store: "sqlite", path: path, synchronous: "full", turns: 7}); err == nil ||
		!strings.Contains(err.Error(), "want 19") {
		t.Errorf("load of 7 turns from a 6-turn session: %v, want a count error", err)
	}
}

func TestOptions_Check(t *testing.T) {
	for _, o := range []options{
		{store: "redis", synchronous: "full", turns: 1},
		{store: "sqlite", synchronous: "off", turns: 1},
		{store: "sqlite", synchronous: "full", turns: 0},
	} {
		if err := o.check(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if err := (&options{store: "postgres", synchronous: "normal", turns: 1}).check(); err != nil {
		t.Error(err)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{4, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
