package crypt_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_Sweep expires a session and checks that Sweep deletes its data
// key too, while a live session keeps its own.
func TestStore_Sweep(t *testing.T) {
	db := memory.NewDB()
	clock := storetest.NewClock()
	ring := crypttest.NewKeyring(t)
	s := wrapMemory(t, db, ring, cairn.StoreOptions{TTL: time.Hour, Now: clock.Now})
	write(t, s, "old", crypttest.Marker())
	clock.Advance(30 * time.Minute)
	write(t, s, "young", crypttest.Marker())
	clock.Advance(31 * time.Minute)
	if _, err := s.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	keys, err := db.Open(cairn.StoreOptions{Namespace: crypt.KeyNamespace(cairn.DefaultNamespace)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Load(t.Context(), "old", 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("data key of the expired session after Sweep: got %v, want ErrNotFound", err)
	}
	if _, err := keys.Load(t.Context(), "young", 0); err != nil {
		t.Errorf("data key of the live session after Sweep: %v", err)
	}
	if _, err := s.Load(t.Context(), "young", 0); err != nil {
		t.Errorf("Load of the live session after Sweep: %v", err)
	}
}

func BenchmarkAppend(b *testing.B) {
	ring := crypttest.NewKeyring(b)
	b.Run("memory", func(b *testing.B) {
		storetest.BenchmarkAppend(b, func(b *testing.B, opts cairn.StoreOptions) cairn.Store {
			return wrapMemory(b, memory.NewDB(), ring, opts)
		})
	})
	b.Run("sqlite", func(b *testing.B) {
		storetest.BenchmarkAppend(b, func(b *testing.B, opts cairn.StoreOptions) cairn.Store {
			s, err := crypt.Open(b.Context(), "sqlite://"+b.TempDir()+"/cairn.db", opts, ring)
			return storetest.Opened(b, s, err)
		})
	})
}
