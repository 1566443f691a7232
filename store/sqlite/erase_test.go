package sqlite_test

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
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

// TestStore_SearchErasure writes a word into sessions, erases them by
// Delete, by Create over an expired session and by Sweep, and looks for
// the word in the database file and its write-ahead log: neither the
// events, nor their texts, nor the search index's pages (with
// secure-delete FTS5 takes the tokens out of them) may keep it. A word is
// a prefix of two letters, one per session, and random hexadecimal digits:
// the index stores a term after the bytes it shares with the term before
// it, so the digits are found wherever the term is stored, and the test
// first checks that the index holds them. FTS5's automatic merges are
// off in the file, as they may leave a deleted text out of a segment they
// write.
func TestStore_SearchErasure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	clock := storetest.NewClock()
	s := openStore(t, path, cairn.StoreOptions{Now: clock.Now})
	ts := openStore(t, path, cairn.StoreOptions{TTL: time.Hour, Now: clock.Now})
	// No merge of the index's segments may drop a deleted text's entries
	// by chance: the delete itself must take them out.
	if _, err := rawDB(t, path).ExecContext(t.Context(), `INSERT INTO search_index (search_index, rank) VALUES ('automerge', 0)`); err != nil {
		t.Fatal(err)
	}
	digits := map[string]string{}
	for i, c := range []struct {
		s  *sqlite.Store
		id string
	}{{s, "kept"}, {s, "deleted"}, {ts, "recreated"}, {ts, "swept"}} {
		digits[c.id] = testenv.RandHex(8)
		word := string(rune('p'+i)) + "x" + digits[c.id]
		if err := c.s.Create(t.Context(), cairn.SessionMeta{ID: c.id}); err != nil {
			t.Fatal(err)
		}
		if err := c.s.Append(t.Context(), c.id, 0, storetest.Conversation(0, "r1", "the word "+word)...); err != nil {
			t.Fatal(err)
		}
		if hits, err := s.Search(t.Context(), word, 10); err != nil || len(hits) != 1 || hits[0].ID != c.id {
			t.Fatalf("Search(%q) = %v, %v; want %s", word, hits, err, c.id)
		}
	}
	var index [][]byte
	rows, err := rawDB(t, path).QueryContext(t.Context(), `SELECT block FROM search_index_data`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		index = append(index, b)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatal(err)
	}
	for id, d := range digits {
		if !slices.ContainsFunc(index, func(b []byte) bool { return bytes.Contains(b, []byte(d)) }) {
			t.Fatalf("the search index's pages do not hold the word of %s (%s): the test cannot see them", id, d)
		}
	}

	if err := s.Delete(t.Context(), "deleted"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	if err := ts.Create(t.Context(), cairn.SessionMeta{ID: "recreated"}); err != nil {
		t.Fatal(err)
	}
	if n, err := ts.Sweep(t.Context()); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1", n, err)
	}
	if err := sqlite.CheckSearchIndex(t.Context(), s); err != nil {
		t.Errorf("integrity of the search index: %v", err)
	}
	checkpointFile(path)(t)
	for id, d := range digits {
		where := rawFiles(path)(t, d)
		if id == "kept" && len(where) == 0 {
			t.Errorf("the word of the kept session is gone from the file")
		}
		if id != "kept" && len(where) > 0 {
			t.Errorf("the word of the session %s is still in %v after its erasure", id, where)
		}
	}
}
