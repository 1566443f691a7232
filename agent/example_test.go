package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/provider/offline"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/memory"
)

// A multi-turn conversation: each Run with Continue sees the earlier turns.
func ExampleSession_Run() {
	ctx := context.Background()
	st, _ := memory.New(cairn.StoreOptions{})
	a := &agent.Agent{Name: "demo", Instructions: "Be brief.", Model: offline.New(), Tools: builtin.Tools(), Store: st}

	s, _ := a.Start(ctx, agent.WithID("chat-1"))
	res, _ := s.Run(ctx, "My name is Ada")
	fmt.Println(res.Output)
	res, _ = s.Run(ctx, "remember color=blue", agent.Continue())
	fmt.Println(res.Output)
	res, _ = s.Run(ctx, "What do you know?", agent.Continue())
	fmt.Println(res.Output)
	fmt.Println(res.Status, s.State().Messages[0].Content)
	// Output:
	// Turn 1. You said "My name is Ada". This is the start of our conversation.
	// OK, I will remember color.
	// Turn 3. You said "What do you know?". Before that you told me "remember color=blue". I remember color="blue".
	// completed Be brief.
}

// The thread-id pattern: Open resumes the session if the store holds it and
// starts it with that ID otherwise, so a caller needs only the ID.
func ExampleAgent_Open() {
	ctx := context.Background()
	st, _ := memory.New(cairn.StoreOptions{})
	a := &agent.Agent{Model: offline.New(), Store: st}

	turn := func(threadID, input string) string {
		s, err := a.Open(ctx, threadID)
		if err != nil {
			return err.Error()
		}
		res, err := s.Run(ctx, input, agent.Continue())
		if err != nil {
			return err.Error()
		}
		return res.Output
	}
	fmt.Println(turn("550e8400-e29b-41d4-a716-446655440000", "Hello, I need help with my order."))
	fmt.Println(turn("550e8400-e29b-41d4-a716-446655440000", "It is order 123."))
	fmt.Println(turn("another-thread", "Hi"))
	// Output:
	// Turn 1. You said "Hello, I need help with my order.". This is the start of our conversation.
	// Turn 2. You said "It is order 123.". Before that you told me "Hello, I need help with my order.".
	// Turn 1. You said "Hi". This is the start of our conversation.
}

// A tool with typed arguments that keeps a session variable. The script
// model stands in for a real one.
func ExampleNewTool() {
	type addInput struct {
		Item string `json:"item" jsonschema:"description=what to add to the list"`
	}
	add := agent.NewTool("add_to_list", "Add an item to the shopping list.", func(ctx context.Context, in addInput) (string, error) {
		var list []string
		if raw, ok := agent.Var(ctx, "list"); ok {
			if err := json.Unmarshal(raw, &list); err != nil {
				return "", err
			}
		}
		list = append(list, in.Item)
		if err := agent.SetVar(ctx, "list", list); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d items", len(list)), nil
	})
	model, _ := script.New(script.Script{Steps: []script.Step{
		{ToolCalls: []script.Call{{Name: "add_to_list", Arguments: json.RawMessage(`{"item":"milk"}`)}}},
		{ToolCalls: []script.Call{{Name: "add_to_list", Arguments: json.RawMessage(`{"item":"eggs"}`)}}},
		{Text: "Added milk and eggs."},
	}})
	ctx := context.Background()
	st, _ := memory.New(cairn.StoreOptions{})
	a := &agent.Agent{Model: model, Tools: []*agent.Tool{add}, Store: st}
	s, _ := a.Start(ctx)
	res, _ := s.Run(ctx, "Add milk and eggs")
	fmt.Println(res.Output)
	fmt.Println(string(s.State().Variables["list"]))
	fmt.Println(string(add.Schema()))
	// Output:
	// Added milk and eggs.
	// ["milk","eggs"]
	// {"properties":{"item":{"type":"string","description":"what to add to the list"}},"additionalProperties":false,"type":"object","required":["item"]}
}

// A tool that needs a person's approval: the run stops, and a later
// process resumes the session, records the decision and finishes the run.
func ExampleSession_Approve() {
	ctx := context.Background()
	st, _ := memory.New(cairn.StoreOptions{})
	refund := agent.NewTool("refund", "Refund an order.", func(_ context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		return "refunded " + in.Order, nil
	}, agent.RequireApproval(), agent.NotIdempotent())
	model, _ := script.New(script.Script{Steps: []script.Step{
		{ToolCalls: []script.Call{{Name: "refund", Arguments: json.RawMessage(`{"order":"123"}`)}}},
		{Text: "The order is refunded."},
	}})
	a := &agent.Agent{Model: model, Tools: []*agent.Tool{refund}, Store: st}

	s, _ := a.Start(ctx, agent.WithID("support-7"))
	res, _ := s.Run(ctx, "Refund order 123")
	fmt.Println(res.Status, res.Awaiting[0].ID)

	// Later, in another process.
	s, _ = a.Resume(ctx, "support-7")
	_ = s.Approve(ctx, "call_0_0", true, "ok by the manager")
	res, _ = s.ResumeRun(ctx)
	fmt.Println(res.Status, res.Output)
	// Output:
	// awaiting_approval call_0_0
	// completed The order is refunded.
}

// A long conversation in a small context budget: before a request would
// exceed it, the older turns are folded into a summary. The model sees the
// instructions, the summary and the recent turns; the store keeps every
// event.
func ExampleAgent_compaction() {
	ctx := context.Background()
	st, _ := memory.New(cairn.StoreOptions{})
	a := &agent.Agent{Instructions: "Be brief.", Model: offline.New(), Store: st, ContextTokens: 400}

	s, _ := a.Start(ctx)
	var res *agent.Result
	for i := 1; i <= 30; i++ {
		res, _ = s.Run(ctx, fmt.Sprintf("note %d", i), agent.Continue())
	}
	fmt.Println(res.Output)

	msgs := s.State().Messages
	fmt.Println(msgs[0].Content)
	fmt.Println(msgs[1].Name, strings.ReplaceAll(msgs[1].Content, "\n", " | "))
	users := 0
	for _, e := range s.Memory().Events() {
		if e.Kind == cairn.KindMessageUser {
			users++
		}
	}
	fmt.Printf("the model sees %d messages; the store holds all %d user messages\n", len(msgs), users)
	// Output:
	// Turn 30. You said "note 30". Before that you told me "note 29".
	// Be brief.
	// cairn_summary Summary of 36 earlier messages (turns 1-18). | First user message: "note 1" | Last user message: "note 18"
	// the model sees 26 messages; the store holds all 30 user messages
}
