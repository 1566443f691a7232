package eino_test

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/cairnhq/cairn"
	eino "github.com/cairnhq/cairn/contrib/eino"
	"github.com/cairnhq/cairn/contrib/eino/internal/demo"
)

// An Eino graph made durable: its checkpoints in a cairn store, its model
// and tool calls recorded in a cairn session as they happen, its tool run
// at most once. The run stops before the tools node for approval; a later
// run — in another process, after a restart — resumes it from the store.
func Example() {
	ctx := context.Background()
	store, err := cairn.Open(ctx, "memory:", cairn.StoreOptions{}) // sqlite:///…, postgres://…, redis://…
	if err != nil {
		panic(err)
	}
	defer store.Close()

	// The graph: a chat model (yours; here a deterministic one that calls
	// append_line) and a tools node, with an interrupt before the tools.
	appendLine := utils.NewTool(&schema.ToolInfo{Name: "append_line", Desc: "append a line"},
		func(ctx context.Context, in struct{ Line string }) (string, error) { return "appended " + in.Line, nil })
	build := func(rec *eino.Recorder) compose.Runnable[[]*schema.Message, *schema.Message] {
		tools, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
			Tools: []tool.BaseTool{rec.Tool(appendLine, eino.NotIdempotent())},
		})
		if err != nil {
			panic(err)
		}
		g := compose.NewGraph[[]*schema.Message, *schema.Message]()
		_ = g.AddChatModelNode("model", demo.Model{})
		_ = g.AddToolsNode("tools", tools)
		_ = g.AddEdge(compose.START, "model")
		_ = g.AddBranch("model", compose.NewGraphBranch(func(_ context.Context, m *schema.Message) (string, error) {
			if len(m.ToolCalls) > 0 {
				return "tools", nil
			}
			return compose.END, nil
		}, map[string]bool{"tools": true, compose.END: true}))
		_ = g.AddEdge("tools", "model")
		r, err := g.Compile(ctx,
			compose.WithCheckPointStore(eino.NewCheckPointStore(store, "")),
			compose.WithInterruptBeforeNodes([]string{"tools"}))
		if err != nil {
			panic(err)
		}
		return r
	}
	input := []*schema.Message{schema.UserMessage("hello")}

	// The first run stops at the interrupt.
	rec, err := eino.NewRecorder(ctx, store, "order-7", eino.Options{Name: "my-graph"})
	if err != nil {
		panic(err)
	}
	_, err = build(rec).Invoke(ctx, input, compose.WithCheckPointID("order-7-checkpoint"), compose.WithCallbacks(rec.Handler()))
	if interrupted, err := rec.Interrupted(ctx, err); err != nil || !interrupted {
		panic(fmt.Sprint("not interrupted: ", err))
	}
	for _, p := range rec.Pending() {
		fmt.Printf("waiting for approval: %s(%s)\n", p.Name, p.Args)
	}
	rec.Close()

	// Later, anywhere: approve and resume from the checkpoint.
	rec, err = eino.NewRecorder(ctx, store, "order-7", eino.Options{Name: "my-graph"})
	if err != nil {
		panic(err)
	}
	defer rec.Close()
	for _, p := range rec.Pending() {
		if err := rec.Decide(ctx, p.ID, true, "looks right"); err != nil {
			panic(err)
		}
	}
	out, err := build(rec).Invoke(ctx, input, compose.WithCheckPointID("order-7-checkpoint"), compose.WithCallbacks(rec.Handler()))
	if err != nil {
		panic(err)
	}
	if err := rec.Finish(ctx, out.Content); err != nil {
		panic(err)
	}
	fmt.Println(out.Content)

	st := rec.Session().State()
	fmt.Println(st.Status, st.Steps, "steps")
	// Output:
	// waiting for approval: append_line({"line":"hello"})
	// done: appended hello
	// completed 3 steps
}
