package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestConformance runs the store contract's suite. Every store a test opens
// is on that test's one file, so that a second open is a reopen.
func TestConformance(t *testing.T) {
	path := storetest.PerTest(func(t *testing.T) string { return filepath.Join(t.TempDir(), "cairn.db") })
	abilities := storetest.Abilities{Leases: true, Sweep: true, Check: true, Snapshots: true, Search: true,
		Envelopes: func(t *testing.T, s cairn.Store, id string) [][]byte {
			envs, err := sqlite.StoredEnvelopes(t.Context(), s.(*sqlite.Store), id)
			if err != nil {
				t.Fatal(err)
			}
			return envs
		},
		DeleteEvent: func(t *testing.T, s cairn.Store, id string, seq int64) {
			if err := sqlite.DeleteEvent(t.Context(), s.(*sqlite.Store), id, seq); err != nil {
				t.Fatal(err)
			}
		}}
	storetest.Run(t, abilities, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		s, err := sqlite.Open(t.Context(), path(t), sqlite.Options{StoreOptions: opts})
		return storetest.Opened(t, s, err)
	})
}

func BenchmarkAppend(b *testing.B) {
	storetest.BenchmarkAppend(b, func(b *testing.B, opts cairn.StoreOptions) cairn.Store {
		s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "cairn.db"), sqlite.Options{StoreOptions: opts})
		return storetest.Opened(b, s, err)
	})
}
