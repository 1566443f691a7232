package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
)

// TestOpen_Errors checks that an unreachable server, a malformed URL and
// a foreign scheme are refused with an error that names the address but
// never the password.
func TestOpen_Errors(t *testing.T) {
	cases := []struct {
		url, want string
	}{
		{"redis://user:s3cret@127.0.0.1:1/0?max_retries=-1", "127.0.0.1:1"},
		{"redis://user:s3cret@127.0.0.1:bad/0", "malformed URL"},
		{"redis://user:s3cret@127.0.0.1:6379/0?no_such_option=1", "malformed URL"},
		{"unix://user:s3cret@/tmp/redis.sock", "want redis or rediss"},
	}
	for _, c := range cases {
		s, err := redis.Open(t.Context(), c.url, cairn.StoreOptions{})
		if err == nil {
			s.Close()
			t.Errorf("Open(%s) succeeded", c.url)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "s3cret") {
			t.Errorf("Open(%s): error %q, want one naming %q and not the password", c.url, msg, c.want)
		}
	}
}

// TestOpen_Registered opens the store through cairn.Open with both schemes'
// registrations in place.
func TestOpen_Registered(t *testing.T) {
	u := testURL(t)
	// An unregistered scheme is refused as unknown before any dial.
	if _, err := cairn.Open(t.Context(), "rediss://127.0.0.1:1/0", cairn.StoreOptions{}); err == nil || strings.Contains(err.Error(), "unknown") {
		t.Errorf("Open(rediss://…) = %v; want the redis store's own error, not an unknown scheme", err)
	}
	ns := "t_" + testenv.RandHex(6)
	cleanNamespace(t, ns)
	s, err := cairn.Open(t.Context(), u, cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*redis.Store); !ok {
		t.Fatalf("cairn.Open(%s) returned a %T, want *redis.Store", u, s)
	}
	mustCreate(t, s, "a")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.List(t.Context(), cairn.ListOptions{}); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("List after Close: got %v, want ErrClosed", err)
	}
}

// TestNew_CallerOwnsClient checks that closing a store made with New
// leaves the caller's client open.
func TestNew_CallerOwnsClient(t *testing.T) {
	c := adminClient(t)
	s, err := redis.New(c, cairn.StoreOptions{Namespace: "t_" + testenv.RandHex(6)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("the caller's client after Close of the store: %v", err)
	}
	if _, err := redis.New(nil, cairn.StoreOptions{}); err == nil {
		t.Error("New with a nil client succeeded")
	}
	if _, err := redis.New(c, cairn.StoreOptions{Namespace: "a:b"}); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("New with namespace a:b: got %v, want ErrInvalidID", err)
	}
}
