package driver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/memory"
)

// TestRegisterByURL: the opener gets the URL whole, and a failed open
// gives a nil Store, not a nil *Store in one.
func TestRegisterByURL(t *testing.T) {
	refused := errors.New("refused")
	var got string
	driver.RegisterByURL(func(_ context.Context, u string, opts cairn.StoreOptions) (*memory.Store, error) {
		got = u
		if u == "driver-test-a://host/refuse" {
			return nil, refused
		}
		return memory.New(opts)
	}, "driver-test-a", "driver-test-b")
	s, err := cairn.Open(t.Context(), "driver-test-b://host/db?x=1", cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got != "driver-test-b://host/db?x=1" {
		t.Errorf("opener got %q, want the URL whole", got)
	}
	s, err = cairn.Open(t.Context(), "driver-test-a://host/refuse", cairn.StoreOptions{})
	if !errors.Is(err, refused) || s != nil {
		t.Errorf("a failed open: %v, %v; want nil and %v", s, err, refused)
	}
}
