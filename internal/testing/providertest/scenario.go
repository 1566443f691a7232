package providertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/provider"
)

// API is what the scenarios every adapter's tests run need to know of the
// adapter: how to make the model under test and how its API answers.
type API struct {
	// Model returns the model under test, sending to s, with its
	// MaxRetries set to retries (zero: the adapter's default).
	Model func(t *testing.T, s *Server, retries int) provider.Model
	// Text answers with a complete stream whose text is text.
	Text func(w http.ResponseWriter, text string)
	// Begin answers with the start of a stream whose text begins with
	// text, and no end.
	Begin func(w http.ResponseWriter, text string)
	// Error answers with an error of the API: the HTTP status, the API's
	// error type (or code), its message and more headers.
	Error func(w http.ResponseWriter, status int, typ, msg string, header map[string]string)
}

// RetryAfter checks that a call answered 429 (typ, msg) with a Retry-After
// of one second is made again, no sooner, and succeeds.
func RetryAfter(t *testing.T, api API, typ, msg string) {
	s := NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		if n == 0 {
			api.Error(w, http.StatusTooManyRequests, typ, msg, map[string]string{"Retry-After": "1"})
			return
		}
		api.Text(w, "ok")
	})
	m := api.Model(t, s, 0)
	resp, err := m.Generate(t.Context(), UserRequest("Hi"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Text != "ok" {
		t.Errorf("Text = %q, want ok", resp.Text)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2 (one retry)", len(reqs))
	}
	if gap := reqs[1].At.Sub(reqs[0].At); gap < time.Second {
		t.Errorf("retry came %v after the 429, want at least the Retry-After of 1s", gap)
	}
}

// ServerErrors checks that a call answered 500 (typ, msg) every time is
// made 1+retries times, retries being the adapter's default, and fails with
// a *provider.StatusError that names the status, typ, msg and the attempts,
// whose text holds each of wantText too.
func ServerErrors(t *testing.T, api API, retries int, typ, msg string, wantText ...string) {
	s := NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		api.Error(w, http.StatusInternalServerError, typ, msg, map[string]string{"Retry-After": "0"})
	})
	m := api.Model(t, s, 0)
	_, err := m.Generate(t.Context(), UserRequest("Hi"))
	if err == nil {
		t.Fatal("Generate succeeded against a failing server")
	}
	if got, want := len(s.Requests()), 1+retries; got != want {
		t.Errorf("server got %d requests, want %d (1 + %d retries)", got, want, retries)
	}
	var se *provider.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *StatusError", err)
	}
	if se.StatusCode != 500 || se.Type != typ || se.Message != msg || se.Attempts != 1+retries {
		t.Errorf("StatusError = %+v, want 500 %s with the server's message and %d attempts", se, typ, 1+retries)
	}
	for _, part := range append([]string{"500", msg, fmt.Sprintf("%d attempts", 1+retries)}, wantText...) {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not contain %q", err, part)
		}
	}
}

// NoRetries checks that a call answered 503 (typ, msg) is made once when
// retries are off.
func NoRetries(t *testing.T, api API, typ, msg string) {
	s := NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		api.Error(w, http.StatusServiceUnavailable, typ, msg, nil)
	})
	m := api.Model(t, s, -1)
	if _, err := m.Generate(t.Context(), UserRequest("Hi")); err == nil {
		t.Fatal("Generate succeeded against a failing server")
	}
	if got := len(s.Requests()); got != 1 {
		t.Errorf("server got %d requests with retries off, want 1", got)
	}
}

// Unauthorized checks that a call answered 401 (typ, msg) is made once and
// fails with a *provider.StatusError of typ whose text names the status and
// msg.
func Unauthorized(t *testing.T, api API, typ, msg string) {
	s := NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		api.Error(w, http.StatusUnauthorized, typ, msg, nil)
	})
	m := api.Model(t, s, 0)
	_, err := m.Generate(t.Context(), UserRequest("Hi"))
	var se *provider.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *StatusError", err)
	}
	if se.StatusCode != http.StatusUnauthorized || se.Type != typ {
		t.Errorf("StatusError = %+v, want 401 %s", se, typ)
	}
	if !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not name the status and the server's message", err)
	}
	if got := len(s.Requests()); got != 1 {
		t.Errorf("server got %d requests, want 1 (no retry on 401)", got)
	}
}

// Cancel checks that a call whose context is cancelled mid-stream returns
// at once with an error that wraps context.Canceled, and is not made again.
func Cancel(t *testing.T, api API) {
	s := NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, done <-chan struct{}) {
		api.Begin(w, "partial")
		select { // hold the stream open until the client goes away
		case <-r.Context().Done():
		case <-done:
		}
	})
	m := api.Model(t, s, 0)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := UserRequest("Hi")
	req.OnText = func(string) { cancel() }
	errc := make(chan error, 1)
	go func() {
		_, err := m.Generate(ctx, req)
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Generate after cancel: error %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Generate did not return after its context was cancelled mid-stream")
	}
	if got := len(s.Requests()); got != 1 {
		t.Errorf("server got %d requests, want 1 (no retry after cancel)", got)
	}
}

// Truncated checks that a stream that ends before the answer does is an
// error, whose text holds want (what was missing), not an answer cut short.
func Truncated(t *testing.T, api API, want string) {
	s := NewServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ <-chan struct{}) {
		api.Begin(w, "Half an ans")
	})
	m := api.Model(t, s, 0)
	_, err := m.Generate(t.Context(), UserRequest("Hi"))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Generate on a stream cut short: error %v, want one about the missing %s", err, want)
	}
}
