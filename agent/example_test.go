package agent_test

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/provider/offline"
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
