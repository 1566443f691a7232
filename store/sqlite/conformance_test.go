package sqlite_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestConformance runs the store contract's suite. Every store a test opens
// is on that test's one file, so that a second open is a reopen.
func TestConformance(t *testing.T) {
	var mu sync.Mutex
	paths := map[*testing.T]string{}
	abilities := storetest.Abilities{Leases: true, Sweep: true, Check: true, Snapshots: true,
		Envelopes: func(t *testing.T, s cairn.Store, id string) [][]byte {
			envs, err := sqlite.StoredEnvelopes(t.Context(), s.(*sqlite.Store), id)
			if err != nil {
				t.Fatal(err)
			}
			return envs
		}}
	storetest.Run(t, abilities, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		mu.Lock()
		path, ok := paths[t]
		if !ok {
			path = filepath.Join(t.TempDir(), "cairn.db")
			paths[t] = path
		}
		mu.Unlock()
		s, err := sqlite.Open(t.Context(), path, sqlite.Options{StoreOptions: opts})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func BenchmarkAppend(b *testing.B) {
	storetest.BenchmarkAppend(b, func(b *testing.B, opts cairn.StoreOptions) cairn.Store {
		s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "cairn.db"), sqlite.Options{StoreOptions: opts})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
