//go:build linux || darwin

package file

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/longterm"
)

// TestLongTerm_StaleTemporary leaves the temporary file of a writer that
// died before its rename, holding an item's text, and checks that the next
// write of the namespace removes it: an item erased since must not
// survive in it.
func TestLongTerm_StaleTemporary(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenLongTerm(t.Context(), dir, longterm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(key string) {
		t.Helper()
		if _, err := s.Put(t.Context(), longterm.Item{Namespace: "users/ada", Key: key, Value: json.RawMessage(`1`)}, longterm.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("a")
	stale := filepath.Join(dir, ltFolder, ltTree, "users", "ada", ".tmp-dead")
	if err := os.WriteFile(stale, []byte(`{"key":"secret","text":"erased words"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	put("b") // a new key: an append
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("after a Put in its namespace the stale temporary file is still there (%v)", err)
	}
	if err := os.WriteFile(stale, []byte("erased words"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := s.Delete(t.Context(), "users/ada", k, 0); err != nil {
			t.Fatal(err)
		}
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(p, "ada") {
			t.Errorf("after the namespace's last item was deleted, %s is left", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
