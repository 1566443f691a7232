package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/openai"
)

// A stand-in for an OpenAI-compatible server, so the example runs offline.
func compatibleServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, data := range []string{
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama3.2","choices":[{"index":0,"delta":{"content":"Hello"}}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama3.2","choices":[{"index":0,"delta":{"content":" there"}}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama3.2","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama3.2","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", data)
		}
	}))
}

func ExampleModel_Generate() {
	srv := compatibleServer() // for example Ollama at http://localhost:11434/v1
	defer srv.Close()

	m, err := openai.New(openai.Config{Model: "llama3.2", BaseURL: srv.URL + "/v1", APIKey: "unused"})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := m.Generate(context.Background(), &provider.Request{
		Messages: []cairn.Message{{Role: cairn.RoleUser, Content: "Say hello"}},
		OnText:   func(delta string) { fmt.Printf("[%s]", delta) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println()
	fmt.Println(m.ID(), resp.Text, resp.FinishReason, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// [Hello][ there]
	// openai:llama3.2 Hello there stop 9 2
}
