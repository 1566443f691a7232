package testcheck

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/memory"
)

// Recording passes every call to a store and keeps the events of each
// append that succeeded, to check what each append held.
type Recording struct {
	cairn.Store
	mu      sync.Mutex
	batches [][]cairn.Event
}

// Append appends events and, when the store took them, keeps a copy.
func (r *Recording) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	err := r.Store.Append(ctx, id, expectSeq, events...)
	if err == nil {
		r.mu.Lock()
		r.batches = append(r.batches, slices.Clone(events))
		r.mu.Unlock()
	}
	return err
}

// Batches returns the events of the appends that succeeded, a batch an
// append, in their order.
func (r *Recording) Batches() [][]cairn.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

// Dying is a store whose process dies at its N-th append: with Applied
// false the append never reaches the store, with Applied true it is
// stored and the process dies before it hears so. Either way that append
// and every later call fail with Err: the process is gone.
type Dying struct {
	cairn.Store
	N       int // the append the process dies at, from 1; 0: never
	Applied bool
	Err     error

	mu    sync.Mutex
	count int
	dead  bool
	kinds []cairn.Kind
}

// Append counts the appends and dies at the N-th.
func (d *Dying) Append(ctx context.Context, id string, seq int64, events ...cairn.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return d.Err
	}
	d.count++
	if d.count != d.N {
		return d.Store.Append(ctx, id, seq, events...)
	}
	d.dead, d.kinds = true, Kinds(events)
	if d.Applied {
		if err := d.Store.Append(ctx, id, seq, events...); err != nil {
			return err
		}
	}
	return d.Err
}

// Load fails once the process died.
func (d *Dying) Load(ctx context.Context, id string, from int64) (*cairn.Record, error) {
	d.mu.Lock()
	dead := d.dead
	d.mu.Unlock()
	if dead {
		return nil, d.Err
	}
	return d.Store.Load(ctx, id, from)
}

// Kinds returns the kinds of the append the process died at.
func (d *Dying) Kinds() []cairn.Kind {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.kinds
}

// Kinds returns the kinds of events, in their order.
func Kinds(events []cairn.Event) []cairn.Kind {
	var ks []cairn.Kind
	for _, e := range events {
		ks = append(ks, e.Kind)
	}
	return ks
}

// MemoryStore returns a new store in memory, closed when the test ends.
func MemoryStore(t testing.TB) *memory.Store {
	t.Helper()
	st, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Sealed wraps inner in store/crypt, with a keyring of one key, k1, whose
// every byte is b, and the data keys in a memory store of their own.
func Sealed(t testing.TB, inner cairn.Store, b byte) crypt.Store {
	t.Helper()
	key, err := crypt.NewKey("k1", bytes.Repeat([]byte{b}, crypt.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	ring, err := crypt.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := crypt.Wrap(inner, crypt.Options{Keyring: ring, Keys: MemoryStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	return enc
}
