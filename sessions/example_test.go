package sessions_test

import (
	"fmt"
	"os"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/sessions"
)

func ExampleImport() {
	data := []byte(`[
		{"role": "system", "content": "Be brief."},
		{"role": "user", "content": "What is 2+2?"},
		{"role": "assistant", "content": "4"}
	]`)
	m, rep, err := sessions.Import(data, "", sessions.ImportOptions{ID: "maths-1", RunID: "run-1",
		Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range m.Events() {
		fmt.Println(e.Seq, e.Kind)
	}
	fmt.Println(rep)
	// Output:
	// 1 run.started
	// 2 message.system
	// 3 message.user
	// 4 model.response
	// 5 run.finished
	// openai: made up: event times set to the import time (2026-01-01T00:00:00Z), one run around the history (run run-1)
}

func ExampleExport() {
	var m cairn.Memory
	_, _ = m.Add(
		cairn.MustEvent(cairn.KindMessageUser, "run-1", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "Hi"}}}),
		cairn.MustEvent(cairn.KindModelResponse, "run-1", cairn.ModelResponse{Text: "Hello!", Usage: cairn.Usage{InputTokens: 3, OutputTokens: 2}}),
	)
	rep, err := sessions.Export(os.Stdout, sessions.OpenAI, &m)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep)
	// Output:
	// [
	//   {
	//     "role": "user",
	//     "content": "Hi"
	//   },
	//   {
	//     "role": "assistant",
	//     "content": "Hello!"
	//   }
	// ]
	// openai: not kept: event timestamps, token usage
}
