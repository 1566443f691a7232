//go:build linux || darwin

package file_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/storetest"
)

// hitsOf returns the hits of a search for q as "ID@seq", best first.
func hitsOf(t *testing.T, s *file.Store, q string) []string {
	t.Helper()
	hits, err := s.Search(t.Context(), q, 10)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, fmt.Sprintf("%s@%d", h.ID, h.Seq))
	}
	return out
}

func wantHits(t *testing.T, s *file.Store, q string, want ...string) {
	t.Helper()
	if got := hitsOf(t, s, q); !slices.Equal(got, want) {
		t.Errorf("Search(%q) = %v, want %v", q, got, want)
	}
}

// mustWrite creates session id when last is 0 and appends a user turn of
// text after seq last.
func mustWrite(t *testing.T, s *file.Store, id string, last int64, text string) {
	t.Helper()
	if last == 0 {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(t.Context(), id, last, storetest.UserTurn(last, "r", text)...); err != nil {
		t.Fatal(err)
	}
}

// TestSearch_TwoStores: a store's search sees what another store of the
// folder (another process) appends and deletes after its first search:
// a new session, a later append, a Delete, and a session created again
// under a deleted one's ID.
func TestSearch_TwoStores(t *testing.T) {
	dir := t.TempDir()
	a := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	b := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	wantHits(t, b, "wombat")
	mustWrite(t, a, "s1", 0, "a wombat here")
	wantHits(t, b, "wombat", "s1@2")
	mustWrite(t, a, "s1", 4, "and a quokka")
	wantHits(t, b, "quokka", "s1@6")
	if err := a.Delete(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	wantHits(t, b, "wombat")
	mustWrite(t, a, "s1", 0, "only kiwis")
	wantHits(t, b, "wombat")
	wantHits(t, b, "quokka")
	wantHits(t, b, "kiwis", "s1@2")
}

// TestSearch_FeedGenerations: with a feed that starts a new generation
// every few lines, a store that searched before many appends of another
// finds them all, and the feed stays short.
func TestSearch_FeedGenerations(t *testing.T) {
	file.SetFeedMax(t, 200)
	dir := t.TempDir()
	a := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	b := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	wantHits(t, b, "w0")
	for i := range 40 {
		mustWrite(t, a, fmt.Sprintf("s%02d", i), 0, fmt.Sprintf("w%d", i))
		if i%7 == 0 {
			wantHits(t, b, fmt.Sprintf("w%d", i), fmt.Sprintf("s%02d@2", i))
		}
	}
	for i := range 40 {
		wantHits(t, b, fmt.Sprintf("w%d", i), fmt.Sprintf("s%02d@2", i))
	}
	if fi, err := os.Stat(filepath.Join(dir, ns, file.FeedName)); err != nil || fi.Size() > 300 {
		t.Errorf("the feed: %v, %v; want at most 300 bytes", fi.Size(), err)
	}
}

// TestSearch_CatchUp: a store's first search finds what the search files
// lack or have wrong, and mends them from the logs: a session written
// before search (no file, no feed, and, older still, no token in its lock
// file), a file that lost its last line (a crash between the log's write
// and the file's), one with a damaged line, and one with a line of events
// the log does not hold.
func TestSearch_CatchUp(t *testing.T) {
	dir := t.TempDir()
	a := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	mustWrite(t, a, "old", 0, "alpha")
	mustWrite(t, a, "cut", 0, "beta")
	mustWrite(t, a, "cut", 4, "delta")
	mustWrite(t, a, "bad", 0, "gamma")
	mustWrite(t, a, "more", 0, "epsilon")
	a.Close()
	path := func(id string) string { return filepath.Join(dir, ns, id, file.SearchName) }
	edit := func(id string, fn func([]byte) []byte) {
		t.Helper()
		b, err := os.ReadFile(path(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path(id), fn(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{path("old"), filepath.Join(dir, ns, file.FeedName)} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(filepath.Join(dir, ns, "old", "lock"), 0); err != nil {
		t.Fatal(err)
	}
	edit("cut", func(b []byte) []byte { return b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1] })
	edit("bad", func(b []byte) []byte { return bytes.Replace(b, []byte("gamma"), []byte("gamm\x00"), 1) })
	logSize := func(id string) int64 {
		fi, err := os.Stat(filepath.Join(dir, ns, id, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	edit("more", func(b []byte) []byte { return append(b, file.SearchLine(9, logSize("more")+100, "phantom")...) })

	b := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	wantHits(t, b, "alpha", "old@2")
	wantHits(t, b, "beta", "cut@2")
	wantHits(t, b, "delta", "cut@6")
	wantHits(t, b, "gamma", "bad@2")
	wantHits(t, b, "epsilon", "more@2")
	wantHits(t, b, "phantom")
	for _, id := range []string{"old", "cut", "bad", "more"} {
		got, err := os.ReadFile(path(id))
		if err != nil {
			t.Fatalf("%s after the search: %v", id, err)
		}
		if bytes.Contains(got, []byte("phantom")) || bytes.Contains(got, []byte{0}) {
			t.Errorf("%s after the search:\n%s", id, got)
		}
	}
	// The appends after it go on from the mended files.
	mustWrite(t, b, "cut", 8, "zeta")
	c := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	wantHits(t, c, "delta", "cut@6")
	wantHits(t, c, "zeta", "cut@10")
}

// TestSearch_LostLine: when the search file of a session the store keeps
// open lost its last line (another process's crash, say), the store's
// next append adds what the file lacks from the log, before its own.
func TestSearch_LostLine(t *testing.T) {
	dir := t.TempDir()
	a := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	mustWrite(t, a, "s", 0, "one")
	mustWrite(t, a, "s", 4, "two")
	p := filepath.Join(dir, ns, "s", file.SearchName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, int64(bytes.LastIndexByte(b[:len(b)-1], '\n')+1)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, a, "s", 8, "three")
	c := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	for i, w := range []string{"one", "two", "three"} {
		wantHits(t, c, w, fmt.Sprintf("s@%d", 4*i+2))
	}
}

// TestSearch_GoneBehindItsBack: a session whose folder went without a
// word to the feed (a Delete whose process died before it wrote its
// line) is not returned: each hit is checked against the files.
func TestSearch_GoneBehindItsBack(t *testing.T) {
	dir := t.TempDir()
	a := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	mustWrite(t, a, "s1", 0, "wombat")
	mustWrite(t, a, "s2", 0, "wombat wombat")
	wantHits(t, a, "wombat", "s2@2", "s1@2")
	if err := os.RemoveAll(filepath.Join(dir, ns, "s2")); err != nil {
		t.Fatal(err)
	}
	wantHits(t, a, "wombat", "s1@2")
}
