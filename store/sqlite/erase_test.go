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
		Raw: rawFiles(path),
		// secure_delete overwrites freed pages, and a checkpoint moves
		// the log into the file and truncates it.
		Settle: checkpointFile(path),
	})
}

// rawFiles returns the files of the database at path (the file and its
// write-ahead log) that hold needle.
func rawFiles(path string) func(t *testing.T, needle string) []string {
	return func(t *testing.T, needle string) []string {
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
	}
}

// checkpointFile moves the write-ahead log of the database at path into the
// file and truncates it.
func checkpointFile(path string) func(t *testing.T) {
	return func(t *testing.T) {
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var busy, logged, moved int
		if err := db.QueryRowContext(t.Context(), `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &moved); err != nil || busy != 0 {
			t.Fatalf("checkpoint: busy %d, %v", busy, err)
		}
	}
}

// TestLongTerm_Erasure writes markers into every field of long-term items,
// erases them (Delete, DeleteNamespace, a replace, Sweep), and looks for
// them in the database file and its write-ahead log.
func TestLongTerm_Erasure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	crypttest.RunLongTerm(t, crypttest.LongTermBackend{
		URL:    "sqlite://" + path,
		Raw:    rawFiles(path),
		Settle: checkpointFile(path),
	})
}
