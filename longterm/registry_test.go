package longterm_test

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/longterm"
)

// TestOpen_UnregisteredScheme checks that an unregistered scheme's error
// names the import that registers it, and that a session backend without
// long-term memory is named as such.
func TestOpen_UnregisteredScheme(t *testing.T) {
	for url, want := range map[string]string{
		"sqlite:///x.db": `import _ "github.com/cairnhq/cairn/store/sqlite" (or "github.com/cairnhq/cairn/store/all")`,
		"nosuch://x":     `import _ "github.com/cairnhq/cairn/store/all"`,
		"mongodb://h/db": `import _ "github.com/cairnhq/cairn/store/mongodb" (or "github.com/cairnhq/cairn/store/all")`,
	} {
		_, err := longterm.Open(t.Context(), url, longterm.Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q): %v, want an error containing %s", url, err, want)
		}
	}
}
