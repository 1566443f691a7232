package eino_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/cairnhq/cairn"
	eino "github.com/cairnhq/cairn/contrib/eino"
)

// twoCalls is a chat model that asks for two tool calls at once, then
// answers with the tools' outputs.
type twoCalls struct{}

func (twoCalls) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	var outs []string
	for _, m := range in {
		if m.Role == schema.Tool {
			outs = append(outs, m.ToolName+"="+m.Content)
		}
	}
	if len(outs) > 0 {
		slices.Sort(outs)
		return schema.AssistantMessage(strings.Join(outs, "; "), nil), nil
	}
	return &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{
		{ID: "call_a", Type: "function", Function: schema.FunctionCall{Name: "wrapped", Arguments: `{}`}},
		{ID: "call_b", Type: "function", Function: schema.FunctionCall{Name: "plain", Arguments: `{}`}},
	}, ResponseMeta: &schema.ResponseMeta{Usage: &schema.TokenUsage{PromptTokens: 5, CompletionTokens: 3}}}, nil
}

// Stream sends the message in two chunks: the calls, then the usage.
func (m twoCalls) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	meta := msg.ResponseMeta
	first := *msg
	first.ResponseMeta = nil
	return schema.StreamReaderFromArray([]*schema.Message{&first, {Role: schema.Assistant, ResponseMeta: meta}}), nil
}

func (m twoCalls) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

func newTool(name string, runs *atomic.Int32, fail bool) tool.InvokableTool {
	return utils.NewTool(&schema.ToolInfo{Name: name, Desc: name},
		func(context.Context, struct{}) (string, error) {
			runs.Add(1)
			if fail {
				return "", errors.New(name + " failed")
			}
			return name + " ok", nil
		})
}

// TestRecorder_StreamAndParallelTools streams a model's answer and runs
// its two tool calls in a tools node that runs tools in parallel: one
// tool wrapped with Tool, one recorded by the Handler alone, one that
// fails. The session holds one model.response per call and one result
// per tool call; a second run of the graph on a finished session begins a
// new run.
func TestRecorder_StreamAndParallelTools(t *testing.T) {
	ctx := t.Context()
	st := open(t, "memory:")
	rec, err := eino.NewRecorder(ctx, st, "s1", eino.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	var wrappedRuns, plainRuns atomic.Int32
	tools, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: []tool.BaseTool{
		rec.Tool(newTool("wrapped", &wrappedRuns, false)),
		newTool("plain", &plainRuns, true),
	}})
	if err != nil {
		t.Fatal(err)
	}
	g := compose.NewGraph[[]*schema.Message, *schema.Message]()
	_ = g.AddChatModelNode("model", twoCalls{})
	_ = g.AddToolsNode("tools", tools)
	_ = g.AddEdge(compose.START, "model")
	_ = g.AddBranch("model", compose.NewStreamGraphBranch(func(_ context.Context, sr *schema.StreamReader[*schema.Message]) (string, error) {
		defer sr.Close()
		var msgs []*schema.Message
		for {
			m, err := sr.Recv()
			if err != nil {
				break
			}
			msgs = append(msgs, m)
		}
		m, err := schema.ConcatMessages(msgs)
		if err != nil {
			return "", err
		}
		if len(m.ToolCalls) > 0 {
			return "tools", nil
		}
		return compose.END, nil
	}, map[string]bool{"tools": true, compose.END: true}))
	_ = g.AddEdge("tools", "model")
	r, err := g.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}

	for turn := 1; turn <= 2; turn++ {
		sr, err := r.Stream(ctx, []*schema.Message{schema.UserMessage("go")}, compose.WithCallbacks(rec.Handler()))
		if err != nil {
			// The plain tool's error fails the tools node: Eino's choice.
			if !strings.Contains(err.Error(), "plain failed") {
				t.Fatalf("turn %d: %v", turn, err)
			}
		} else {
			sr.Close()
		}
		if err := rec.Err(); err != nil {
			t.Fatalf("turn %d: the recorder: %v", turn, err)
		}
		if err := rec.Finish(ctx, "turn over"); err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
	}

	rc, err := st.Load(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	results := map[string]cairn.ToolResult{}
	for _, e := range rc.Events {
		got = append(got, string(e.Kind))
		v, _ := e.Decode()
		switch d := v.(type) {
		case *cairn.ModelResponse:
			if len(d.ToolCalls) != 2 || d.Usage.InputTokens != 5 || d.Usage.OutputTokens != 3 {
				t.Errorf("seq %d: model.response %+v; want the two calls and the streamed usage", e.Seq, d)
			}
		case *cairn.ToolResult:
			results[d.CallID+"@"+e.Run] = *d
		}
	}
	run := []string{"run.started", "model.response", "tool.result", "tool.result", "run.finished"}
	if want := slices.Concat(run, run); !slices.Equal(got, want) {
		t.Fatalf("events %v\nwant %v", got, want)
	}
	if wrappedRuns.Load() != 2 || plainRuns.Load() != 2 {
		t.Errorf("runs: wrapped %d, plain %d; want 2 each (one per turn)", wrappedRuns.Load(), plainRuns.Load())
	}
	var errs, oks int
	for _, r := range results {
		switch {
		case r.Name == "plain" && r.IsError && strings.Contains(r.Output, "plain failed"):
			errs++
		case r.Name == "wrapped" && !r.IsError && r.Output == "wrapped ok":
			oks++
		default:
			t.Errorf("unexpected result %+v", r)
		}
	}
	if errs != 2 || oks != 2 {
		t.Errorf("results %+v; want per turn the wrapped tool's output and the plain tool's error", results)
	}
}
