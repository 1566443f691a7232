package crypt_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/memory"
	_ "github.com/cairnhq/cairn/store/sqlite" // sqlite://
)

// TestLongTermConformance runs the long-term memory suite through the
// encrypting store, over the memory backend and over SQLite (whose text
// index then holds the hashes of words).
func TestLongTermConformance(t *testing.T) {
	ring := crypttest.NewKeyring(t)
	t.Run("memory", func(t *testing.T) {
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
			inner, err := db.OpenLongTerm(longterm.Options{Now: opts.Now, MaxItemSize: crypt.InnerItemSize(opts.MaxItemSize)})
			if err != nil {
				t.Fatal(err)
			}
			s, err := crypt.WrapLongTerm(inner, ring, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
	t.Run("sqlite", func(t *testing.T) {
		var mu sync.Mutex
		paths := map[*testing.T]string{}
		lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
			mu.Lock()
			path, ok := paths[t]
			if !ok {
				path = filepath.Join(t.TempDir(), "cairn.db")
				paths[t] = path
			}
			mu.Unlock()
			s, err := crypt.OpenLongTerm(t.Context(), "sqlite://"+path, opts, ring)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}
