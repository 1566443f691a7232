package agent_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/provider/offline"
	"github.com/cairnhq/cairn/store/memory"
)

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
