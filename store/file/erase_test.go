package file_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
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
		Raw: func(t *testing.T, needle string) []string {
			var where []string
			err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
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
		},
	})
}
