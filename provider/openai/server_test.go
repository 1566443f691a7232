package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/cairnhq/cairn/internal/testing/providertest"
	"github.com/cairnhq/cairn/provider"
)

// api tells the scenarios of providertest how the Chat Completions API
// answers.
var api = providertest.API{
	Model: func(t *testing.T, s *providertest.Server, retries int) provider.Model {
		return newModel(t, s, Config{MaxRetries: retries})
	},
	Text:  func(w http.ResponseWriter, text string) { writeSSE(w, true, textChunk(text), finishChunk("stop")) },
	Begin: func(w http.ResponseWriter, text string) { writeSSE(w, false, textChunk(text)) },
	Error: writeError,
}

// writeSSE writes each chunk as one server-sent event, flushing after each,
// and ends the stream with [DONE] when done is true.
func writeSSE(w http.ResponseWriter, done bool, chunks ...string) {
	events := make([]providertest.Event, 0, len(chunks)+1)
	for _, c := range chunks {
		events = append(events, providertest.Event{Data: c})
	}
	if done {
		events = append(events, providertest.Event{Data: "[DONE]"})
	}
	providertest.WriteEvents(w, events...)
}

// chunk is one chat.completion.chunk with the given choices JSON.
func chunk(choices string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":` + choices + `}`
}

func textChunk(s string) string {
	b, _ := json.Marshal(s)
	return chunk(`[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]`)
}

func finishChunk(reason string) string {
	return chunk(`[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]`)
}

func usageChunk(in, out int) string {
	return chunk(fmt.Sprintf(`[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, in, out, in+out))
}

// writeError answers with an OpenAI error body.
func writeError(w http.ResponseWriter, status int, code, msg string, header map[string]string) {
	providertest.WriteError(w, status, header, fmt.Sprintf(`{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":%q}}`, msg, code))
}
