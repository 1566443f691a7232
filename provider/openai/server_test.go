package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/cairnhq/cairn/internal/providertest"
)

// server is a local Chat Completions endpoint (see providertest).
type server = providertest.Server

func newServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int, done <-chan struct{})) *server {
	t.Helper()
	return providertest.NewServer(t, handle)
}

// writeSSE writes each chunk as one server-sent event, flushing after each,
// and ends the stream with [DONE] when done is true.
func writeSSE(w http.ResponseWriter, done bool, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		if f != nil {
			f.Flush()
		}
	}
	if done {
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
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
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":%q}}`, msg, code)
}

// jsonEqual reports whether two JSON documents hold the same value.
func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want invalid JSON %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}
