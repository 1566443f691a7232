package steps_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/steps"
)

// TestMain fails the package's tests if a session leaves a goroutine
// behind (a lease's renewals).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t testing.TB, st cairn.Store, id string, opts ...steps.Options) *steps.Session {
	t.Helper()
	var o steps.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	s, err := steps.Open(t.Context(), st, id, o)
	if err != nil {
		t.Fatalf("open %s: %v", id, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func loadEvents(t testing.TB, st cairn.Store, id string) []cairn.Event {
	t.Helper()
	rec, err := st.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
	return rec.Events
}

// kinds lists the events' kinds, a custom event as its type.
func kinds(t testing.TB, events []cairn.Event) []string {
	t.Helper()
	var out []string
	for _, e := range events {
		if e.Kind != cairn.KindCustom {
			out = append(out, string(e.Kind))
			continue
		}
		v, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v.(*cairn.Custom).Type)
	}
	return out
}

// counter counts the runs of step functions, by name.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) fn(name string, result int) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.n == nil {
			c.n = map[string]int{}
		}
		c.n[name]++
		return result, nil
	}
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

// errLost is an outage: the connection broke before the reply came.
var errLost = fmt.Errorf("the reply was lost: %w", syscall.ECONNRESET)

// faultyStore fails its n-th append (from 1) with err; with applied, the
// append is stored first (the reply was lost). Every other call goes
// through.
type faultyStore struct {
	cairn.Store
	mu      sync.Mutex
	n       int
	err     error
	applied bool
	count   int
}

func (f *faultyStore) Append(ctx context.Context, id string, seq int64, events ...cairn.Event) error {
	f.mu.Lock()
	f.count++
	hit := f.count == f.n
	f.mu.Unlock()
	if !hit {
		return f.Store.Append(ctx, id, seq, events...)
	}
	if f.applied {
		if err := f.Store.Append(ctx, id, seq, events...); err != nil {
			return err
		}
	}
	return f.err
}
