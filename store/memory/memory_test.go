package memory_test

import (
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestConformance(t *testing.T) {
	db := storetest.PerTest(func(*testing.T) *memory.DB { return memory.NewDB() })
	storetest.Run(t, storetest.Abilities{Leases: true, Claims: true, Sweep: true, Snapshots: true, Search: true, Envelopes: memory.Envelopes}, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		s, err := db(t).Open(opts)
		return storetest.Opened(t, s, err)
	})
}

func BenchmarkAppend(b *testing.B) {
	storetest.BenchmarkAppend(b, func(b *testing.B, opts cairn.StoreOptions) cairn.Store {
		s, err := memory.New(opts)
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}
