package adapter

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/provider"
)

func TestRetries(t *testing.T) {
	for _, c := range []struct{ n, want int }{{0, 3}, {-1, 0}, {-7, 0}, {1, 1}, {5, 5}} {
		if got := Retries(c.n, 3); got != c.want {
			t.Errorf("Retries(%d, 3) = %d, want %d", c.n, got, c.want)
		}
	}
}

type apiError struct{ code int }

func (e *apiError) Error() string { return "api error" }

// attempt makes n requests under ctx through CountAttempts.
func attempt(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	for range n {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://model.invalid/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := CountAttempts(req, func(*http.Request) (*http.Response, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFailure(t *testing.T) {
	status := func(e *apiError) *provider.StatusError { return &provider.StatusError{StatusCode: e.code} }
	lost := errors.New("connection reset")

	ctx := WithAttempts(t.Context())
	attempt(t, ctx, 3)
	err := Failure(ctx, "m x", &apiError{code: 503}, status)
	se, ok := errors.AsType[*provider.StatusError](err)
	if !ok || se.StatusCode != 503 || se.Attempts != 3 || !strings.HasPrefix(err.Error(), "m x: HTTP 503") {
		t.Errorf("Failure of an API error after 3 attempts = %v (%+v), want a 503 StatusError with 3 attempts", err, se)
	}
	if err := Failure(ctx, "m x", lost, status); !errors.Is(err, lost) || err.Error() != "m x: after 3 attempts: connection reset" {
		t.Errorf("Failure of a connection error after 3 attempts = %v", err)
	}

	ctx = WithAttempts(t.Context())
	attempt(t, ctx, 1)
	if err := Failure(ctx, "m x", lost, status); err.Error() != "m x: connection reset" {
		t.Errorf("Failure after one attempt = %v, want no count", err)
	}

	ctx, cancel := context.WithCancel(WithAttempts(t.Context()))
	cancel()
	if err := Failure(ctx, "m x", &apiError{code: 500}, status); !errors.Is(err, context.Canceled) || errors.As(err, new(*provider.StatusError)) {
		t.Errorf("Failure after cancel = %v, want context.Canceled alone", err)
	}
}

func TestArguments(t *testing.T) {
	for text, want := range map[string]string{
		"":                   `{}`,
		"  ":                 `{}`,
		` {"a": 1} `:         `{"a": 1}`,
		`{"expression": "2*`: `"{\"expression\": \"2*"`,
		`not json`:           `"not json"`,
	} {
		if got := string(Arguments(text)); got != want {
			t.Errorf("Arguments(%q) = %s, want %s", text, got, want)
		}
	}
}
