package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/anthropic"
)

// A stand-in for the Messages API, so the example runs offline.
func messagesServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range [][2]string{
			{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":12,"output_tokens":1}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check."}}`},
			{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"calc","input":{}}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"expression\":"}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"2*(3+4)\"}"}}`},
			{"content_block_stop", `{"type":"content_block_stop","index":1}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}`},
			{"message_stop", `{"type":"message_stop"}`},
		} {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e[0], e[1])
		}
	}))
}

func ExampleModel_Generate() {
	srv := messagesServer()
	defer srv.Close()

	m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "sk-ant-example", BaseURL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := m.Generate(context.Background(), &provider.Request{
		Messages: []cairn.Message{{Role: cairn.RoleUser, Content: "What is 2*(3+4)?"}},
		Tools:    []provider.Tool{{Name: "calc", Schema: []byte(`{"type":"object","properties":{"expression":{"type":"string"}}}`)}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.ID(), resp.FinishReason, resp.Text)
	for _, c := range resp.ToolCalls {
		fmt.Println(c.ID, c.Name, string(c.Args))
	}
	// Output:
	// anthropic:claude-sonnet-4-5 tool_calls Let me check.
	// toolu_01 calc {"expression": "2*(3+4)"}
}
