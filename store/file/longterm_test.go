//go:build linux || darwin

package file_test

import (
	"testing"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestLongTermConformance runs the long-term memory suite. Every store a
// test opens is on that test's one folder, so that a second open is a
// reopen.
func TestLongTermConformance(t *testing.T) {
	dir := storetest.PerTest(func(t *testing.T) string { return t.TempDir() })
	lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
		s, err := file.OpenLongTerm(t.Context(), dir(t), opts)
		return storetest.Opened(t, s, err)
	})
}
