package memory_test

import (
	"sync"
	"testing"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/memory"
)

func TestLongTermConformance(t *testing.T) {
	var mu sync.Mutex
	dbs := map[*testing.T]*memory.DB{}
	lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
		mu.Lock()
		db := dbs[t]
		if db == nil {
			db = memory.NewDB()
			dbs[t] = db
		}
		mu.Unlock()
		s, err := db.OpenLongTerm(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
