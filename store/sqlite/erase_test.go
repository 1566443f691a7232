package sqlite_test

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/store/crypt/crypttest"
)

// TestStore_Erasure writes a marker into a session, deletes it, and looks
// for the marker in the database file and its write-ahead log, with and
// without encryption. Encrypted, the marker never reaches either file.
func TestStore_Erasure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	crypttest.Run(t, crypttest.Backend{
		URL: "sqlite://" + path,
		Raw: func(t *testing.T, needle string) []string {
			var where []string
			for _, p := range []string{path, path + "-wal"} {
				b, err := os.ReadFile(p)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte(needle)) {
					where = append(where, filepath.Base(p))
				}
			}
			return where
		},
		// secure_delete overwrites freed pages, and a checkpoint moves
		// the log into the file and truncates it.
		Settle: func(t *testing.T) {
			db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var busy, logged, moved int
			if err := db.QueryRowContext(t.Context(), `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &moved); err != nil || busy != 0 {
				t.Fatalf("checkpoint: busy %d, %v", busy, err)
			}
		},
	})
}
