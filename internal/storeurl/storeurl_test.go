package storeurl

import (
	"strings"
	"testing"
)

// TestUnknown_NoneRegistered checks the message when no backend registered
// any scheme: it says so rather than printing an empty list, and names the
// import.
func TestUnknown_NoneRegistered(t *testing.T) {
	got := Unknown("postgres", "postgres://h/db", nil, Backends)
	for _, want := range []string{"none registered", `import _ "github.com/cairnhq/cairn/store/postgres"`} {
		if !strings.Contains(got, want) {
			t.Errorf("Unknown = %q, want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, "known: )") {
		t.Errorf("Unknown = %q: an empty list", got)
	}
}
