//go:build linux || darwin

package file_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/store/crypt/crypttest"
)

// TestStore_Erasure writes a marker into a session, deletes it, and looks
// for the marker in every file under the store's folder, with and without
// encryption.
func TestStore_Erasure(t *testing.T) {
	dir := t.TempDir()
	crypttest.Run(t, crypttest.Backend{
		URL: "file://" + dir,
		Raw: rawFiles(dir),
	})
}

// rawFiles returns the files under dir that hold needle, and the files
// and folders whose path holds it.
func rawFiles(dir string) func(t *testing.T, needle string) []string {
	return func(t *testing.T, needle string) []string {
		var where []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if rel, _ := filepath.Rel(dir, p); strings.Contains(rel, needle) {
				where = append(where, rel+" (its name)")
			}
			if d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(b, []byte(needle)) {
				rel, _ := filepath.Rel(dir, p)
				where = append(where, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return where
	}
}

// TestLongTerm_Erasure writes markers into every field of long-term items,
// erases them (Delete, DeleteNamespace, a replace, Sweep), and looks for
// them in every file under the store's folder.
func TestLongTerm_Erasure(t *testing.T) {
	dir := t.TempDir()
	crypttest.RunLongTerm(t, crypttest.LongTermBackend{URL: "file://" + dir, Raw: rawFiles(dir)})
}
