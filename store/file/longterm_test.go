//go:build linux || darwin

package file_test

import (
	"sync"
	"testing"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/file"
)

// TestLongTermConformance runs the long-term memory suite. Every store a
// test opens is on that test's one folder, so that a second open is a
// reopen.
func TestLongTermConformance(t *testing.T) {
	var mu sync.Mutex
	dirs := map[*testing.T]string{}
	lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
		mu.Lock()
		dir, ok := dirs[t]
		if !ok {
			dir = t.TempDir()
			dirs[t] = dir
		}
		mu.Unlock()
		s, err := file.OpenLongTerm(t.Context(), dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
