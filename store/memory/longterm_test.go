package memory_test

import (
	"testing"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestLongTermConformance(t *testing.T) {
	db := storetest.PerTest(func(*testing.T) *memory.DB { return memory.NewDB() })
	lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
		s, err := db(t).OpenLongTerm(opts)
		return storetest.Opened(t, s, err)
	})
}
