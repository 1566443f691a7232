// Package demo is the Eino graph of the example and of the tests: a chat
// model node with a deterministic model, a tools node with one tool that
// appends a line to a file, and an interrupt before the tools node, where
// a person approves the call.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/cairnhq/cairn"
	eino "github.com/cairnhq/cairn/contrib/eino"
	"github.com/cairnhq/cairn/steps"
)

// The graph's node keys.
const (
	NodeModel = "model"
	NodeTools = "tools"
)

// ToolName is the name of the demo's tool.
const ToolName = "append_line"

// Model is a deterministic chat model: asked without a tool result, it
// calls append_line with the last user message's text; given a tool
// result, it answers with it.
type Model struct{}

var _ model.ToolCallingChatModel = Model{}

// Generate answers as the type's doc says.
func (Model) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	usage := &schema.TokenUsage{PromptTokens: 10 * len(in), CompletionTokens: 7, TotalTokens: 10*len(in) + 7}
	var user string
	for _, m := range in {
		switch m.Role {
		case schema.Tool:
			return &schema.Message{Role: schema.Assistant, Content: "done: " + m.Content,
				ResponseMeta: &schema.ResponseMeta{FinishReason: "stop", Usage: usage}}, nil
		case schema.User:
			user = m.Content
		}
	}
	if user == "" {
		return nil, errors.New("demo model: no user message to act on")
	}
	args, _ := json.Marshal(map[string]string{"line": user})
	return &schema.Message{
		Role:    schema.Assistant,
		Content: "I will append the line.",
		ToolCalls: []schema.ToolCall{{
			ID: "call_append_1", Type: "function",
			Function: schema.FunctionCall{Name: ToolName, Arguments: string(args)},
		}},
		ResponseMeta: &schema.ResponseMeta{FinishReason: "tool_calls", Usage: usage},
	}, nil
}

// Stream returns Generate's message as a stream of one chunk.
func (m Model) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

// WithTools returns the model: it knows its one tool.
func (m Model) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// AppendLine is a tool that is not idempotent: each call appends a line to
// the file Path.
type AppendLine struct{ Path string }

var _ tool.InvokableTool = AppendLine{}

// Info describes the tool.
func (AppendLine) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{
		Name: ToolName,
		Desc: "append a line to the file",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"line": {Type: schema.String, Desc: "the line", Required: true},
		}),
	}, nil
}

// InvokableRun appends the line.
func (t AppendLine) InvokableRun(_ context.Context, args string, _ ...tool.Option) (string, error) {
	var in struct {
		Line string `json:"line"`
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return "", fmt.Errorf("append_line: arguments %q: %w", args, err)
	}
	if strings.Contains(in.Line, "\n") {
		return "", fmt.Errorf("append_line: the line holds a newline")
	}
	f, err := os.OpenFile(t.Path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return "", err
	}
	if _, err := fmt.Fprintln(f, in.Line); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return "appended " + in.Line, nil
}

// Graph builds and compiles the demo graph: START → model → tools (if the
// model called a tool; an interrupt before it) → model → END, with its
// checkpoints in cps and t as its tool, wrapped by rec.
func Graph(ctx context.Context, rec *eino.Recorder, cps compose.CheckPointStore, t tool.InvokableTool) (compose.Runnable[[]*schema.Message, *schema.Message], error) {
	tools, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: []tool.BaseTool{rec.Tool(t, eino.NotIdempotent())}})
	if err != nil {
		return nil, err
	}
	g := compose.NewGraph[[]*schema.Message, *schema.Message]()
	if err := g.AddChatModelNode(NodeModel, Model{}); err != nil {
		return nil, err
	}
	if err := g.AddToolsNode(NodeTools, tools); err != nil {
		return nil, err
	}
	if err := g.AddEdge(compose.START, NodeModel); err != nil {
		return nil, err
	}
	branch := compose.NewGraphBranch(func(_ context.Context, m *schema.Message) (string, error) {
		if len(m.ToolCalls) > 0 {
			return NodeTools, nil
		}
		return compose.END, nil
	}, map[string]bool{NodeTools: true, compose.END: true})
	if err := g.AddBranch(NodeModel, branch); err != nil {
		return nil, err
	}
	if err := g.AddEdge(NodeTools, NodeModel); err != nil {
		return nil, err
	}
	return g.Compile(ctx,
		compose.WithCheckPointStore(cps),
		compose.WithInterruptBeforeNodes([]string{NodeTools}),
		compose.WithGraphName("cairn-demo"))
}

// Outcome is how a call of Run ended.
type Outcome struct {
	Awaiting []cairn.ToolCall // the calls that wait for approval; empty when the run finished
	Output   string           // the graph's answer, when it finished
}

// CheckpointID returns the checkpoint ID of session id's graph.
func CheckpointID(session string) string { return session + "-checkpoint" }

// Run runs the demo graph in session id of store, with t as its tool:
// from the start up to its interrupt before the tools node, or, with
// approve, from the checkpoint the interrupt left to its end, the pending
// calls approved. A call of t whose outcome is unknown (a process stopped
// while it ran) makes Run return an error wrapping steps.ErrOutcomeUnknown,
// the run left as it is.
func Run(ctx context.Context, store cairn.Store, id string, t tool.InvokableTool, prompt string, approve bool) (Outcome, error) {
	rec, err := eino.NewRecorder(ctx, store, id, eino.Options{Name: "eino-demo"})
	if err != nil {
		return Outcome{}, err
	}
	defer rec.Close()
	cps := eino.NewCheckPointStore(store, "")
	cpID := CheckpointID(id)
	if _, err := cps.SessionID(cpID); err != nil {
		return Outcome{}, err
	}
	r, err := Graph(ctx, rec, cps, t)
	if err != nil {
		return Outcome{}, err
	}
	st := rec.Session().State()
	switch {
	case approve && (st.Run == "" || st.Status == cairn.StatusCompleted || st.Status == cairn.StatusFailed):
		return Outcome{}, fmt.Errorf("session %s: nothing waits for approval (the session's status is %s)", id, st.Status)
	case approve:
		for _, p := range st.Pending {
			if _, ok := st.Approvals[p.ID]; ok {
				continue
			}
			if err := rec.Decide(ctx, p.ID, true, "on the command line"); err != nil {
				return Outcome{}, err
			}
		}
	case st.Status == cairn.StatusAwaiting:
		return awaiting(rec), nil
	case st.Status == cairn.StatusCompleted:
		return Outcome{Output: st.Output}, nil
	case st.Run == "":
		if err := rec.Session().User(ctx, prompt); err != nil {
			return Outcome{}, err
		}
	}
	out, err := r.Invoke(ctx, []*schema.Message{schema.UserMessage(prompt)},
		compose.WithCheckPointID(cpID), compose.WithCallbacks(rec.Handler()))
	if interrupted, ierr := rec.Interrupted(ctx, err); interrupted {
		if ierr != nil {
			return Outcome{}, ierr
		}
		return awaiting(rec), rec.Err()
	}
	if errors.Is(err, steps.ErrOutcomeUnknown) {
		return Outcome{}, err
	}
	if err != nil {
		if ferr := rec.Fail(ctx, err); ferr != nil {
			return Outcome{}, errors.Join(err, ferr)
		}
		return Outcome{}, err
	}
	if err := rec.Err(); err != nil {
		return Outcome{}, err
	}
	if err := rec.Finish(ctx, out.Content); err != nil {
		return Outcome{}, err
	}
	return Outcome{Output: out.Content}, nil
}

func awaiting(rec *eino.Recorder) Outcome {
	var o Outcome
	for _, p := range rec.Pending() {
		o.Awaiting = append(o.Awaiting, p.ToolCall)
	}
	return o
}
