// Package providertest is the local model endpoint the tests of the
// model providers (provider/openai, provider/anthropic) talk to: an HTTP
// server that records every request and answers each with the test's
// handler. It also holds what those tests share: writers of server-sent
// events and error answers, checks of request bodies and tool calls, and
// the scenarios every adapter passes (retries, errors, cancellation, a
// stream cut short), told of each adapter through an API.
package providertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/provider"
)

// Server records what it receives and answers each request with the
// handler the test gives it.
type Server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []Received
}

// Received is one request as the server got it.
type Received struct {
	At     time.Time
	Path   string
	Header http.Header
	Body   []byte
}

// NewServer starts a server whose handler gets the zero-based number of
// the request it answers. done is closed when the test ends, before the
// server closes, so that handlers that wait for it return.
func NewServer(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, n int, done <-chan struct{})) *Server {
	t.Helper()
	s := &Server{}
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
		s.reqs = append(s.reqs, Received{At: at, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		handle(w, r, n, done)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(done) })
	return s
}

// Requests returns what the server has received so far.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.reqs...)
}

// Send makes the call req on m, and returns the one request the server got
// for it. It fails t when the call fails or the server got no request or
// more than one.
func (s *Server) Send(t testing.TB, m provider.Model, req *provider.Request) Received {
	t.Helper()
	before := len(s.Requests())
	if _, err := m.Generate(t.Context(), req); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	reqs := s.Requests()
	if len(reqs) != before+1 {
		t.Fatalf("server got %d requests, want 1", len(reqs)-before)
	}
	return reqs[before]
}
