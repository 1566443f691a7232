package memory_test

import (
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	dbs := map[*testing.T]*memory.DB{}
	storetest.Run(t, storetest.Abilities{Leases: true, Claims: true, Sweep: true, Snapshots: true, Envelopes: memory.Envelopes}, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		mu.Lock()
		db := dbs[t]
		if db == nil {
			db = memory.NewDB()
			dbs[t] = db
		}
		mu.Unlock()
		s, err := db.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
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
