package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"
)

// server is a local Chat Completions endpoint that records what it receives
// and answers each request with the handler the test gives it.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

type received struct {
	at     time.Time
	path   string
	header http.Header
	body   []byte
}

// newServer starts a server whose handler gets the zero-based number of the
// request it answers. done is closed when the test ends, before the server
// closes, so that handlers that wait for it return.
func newServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int, done <-chan struct{})) *server {
	t.Helper()
	s := &server{}
	done := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		n := len(s.reqs)
		s.reqs = append(s.reqs, received{at: at, path: r.URL.Path, header: r.Header.Clone(), body: body})
		s.mu.Unlock()
		handle(w, r, n, done)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(done) })
	return s
}

// requests returns what the server has received so far.
func (s *server) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.reqs...)
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
