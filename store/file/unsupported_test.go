//go:build !linux && !darwin

package file_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/file"
)

// TestOpen_Unsupported: on a system the file store does not run on, Open
// and cairn.Open("file:…") fail with an error that names the system and
// suggests the sqlite store, matched by errors.ErrUnsupported, and create
// nothing.
func TestOpen_Unsupported(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := filepath.Join(t.TempDir(), "sessions")
	_, err := file.Open(t.Context(), dir, cairn.StoreOptions{})
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%s: %v, want errors.ErrUnsupported", what, err)
			return
		}
		for _, want := range []string{runtime.GOOS, "sqlite:"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not name %q", what, err, want)
			}
		}
	}
	check("file.Open", err)
	s, err := cairn.Open(t.Context(), "file:rel/sessions", cairn.StoreOptions{})
	if err == nil {
		s.Close()
	}
	check(`cairn.Open("file:rel/sessions")`, err)
	for _, p := range []string{dir, "rel"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after the failed opens (%v)", p, err)
		}
	}
}
