//go:build linux || darwin

package file_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/storetest"
)

// tree returns every path under dir, relative to it, with the file's
// content or "dir" or "-> target" for a symbolic link.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir() && d.Name() == file.JournalDir:
			return fs.SkipDir // the store's own; journal_test.go looks inside
		case d.Name() == file.FeedName:
			return nil // the search's, which names no deleted session (erase_test.go)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(m map[string]string) []string {
	var k []string
	for p := range m {
		k = append(k, p)
	}
	slices.Sort(k)
	return k
}

// TestStore_HostileIDs feeds IDs and namespaces that try to leave the
// store's folder to every method, then checks that nothing was created
// anywhere: not beside the store, not inside it.
func TestStore_HostileIDs(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	if err := os.MkdirAll(filepath.Join(parent, "outside"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	hostile := []string{
		"../escape", "../../escape", "..", ".", "/abs", "/", "a/../../escape", `..\escape`, "escape/..",
		"%2e%2e%2fescape", "a\x00b", ".tmp-x", ".trash-x", "\u2215escape", "a/b", "~", "$HOME", "",
		"escape\n", strings.Repeat("../", 50) + "escape",
	}
	for _, id := range hostile {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("Create(%q): got %v, want ErrInvalidID", id, err)
		}
		if err := s.Append(t.Context(), id, 0, storetest.Custom(1, "x")); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("Append(%q): got %v, want ErrInvalidID", id, err)
		}
		if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("Load(%q): got %v, want ErrInvalidID", id, err)
		}
		if err := s.Delete(t.Context(), id); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("Delete(%q): got %v, want ErrInvalidID", id, err)
		}
		if id == "" {
			continue // the default namespace
		}
		if _, err := file.Open(t.Context(), dir, cairn.StoreOptions{Namespace: id}); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("Open with namespace %q: got %v, want ErrInvalidID", id, err)
		}
	}
	if _, err := s.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{".", "outside", "store", "store/" + ns}
	if got := keys(tree(t, parent)); !slices.Equal(got, want) {
		t.Errorf("after hostile IDs the folders hold %v, want %v", got, want)
	}
}

// TestStore_Symlinks plants symbolic links that lead out of the store where
// a session folder or a namespace folder belongs: the store refuses to
// follow them, and nothing outside changes.
func TestStore_Symlinks(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	outside := filepath.Join(parent, "outside")
	// A real session outside the store, which the links point to.
	victim := openIn(t, outside, cairn.StoreOptions{Namespace: ns})
	if err := victim.Create(t.Context(), cairn.SessionMeta{ID: "victim"}); err != nil {
		t.Fatal(err)
	}
	if err := victim.Append(t.Context(), "victim", 0, storetest.UserTurn(0, "r", "private")...); err != nil {
		t.Fatal(err)
	}
	victim.Close()

	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	links := map[string]string{
		"rel": "../../outside/" + ns + "/victim",
		"abs": filepath.Join(outside, ns, "victim"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../outside", filepath.Join(dir, "evilns")); err != nil {
		t.Fatal(err)
	}
	before := tree(t, parent)

	for id := range links {
		if rec, err := s.Load(t.Context(), id, 0); err == nil {
			t.Errorf("Load(%s) through a link out of the store succeeded: %d events", id, len(rec.Events))
		}
		if err := s.Append(t.Context(), id, 4, storetest.Custom(5, "x")); err == nil {
			t.Errorf("Append(%s) through a link out of the store succeeded", id)
		}
		if err := s.Delete(t.Context(), id); err == nil {
			t.Errorf("Delete(%s) through a link out of the store succeeded", id)
		}
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err == nil {
			t.Errorf("Create(%s) over a link succeeded", id)
		}
	}
	page, err := s.List(t.Context(), cairn.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(page.Sessions) != 0 {
		t.Errorf("List shows %d sessions through links, want none", len(page.Sessions))
	}
	if _, err := s.Sweep(t.Context()); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if evil, err := file.Open(t.Context(), dir, cairn.StoreOptions{Namespace: "evilns"}); err == nil {
		evil.Close()
		t.Error("Open with a namespace folder that links out of the store succeeded")
	}
	after := tree(t, parent)
	for _, p := range keys(after) {
		if before[p] != after[p] {
			t.Errorf("%s changed: %q, was %q", p, after[p], before[p])
		}
	}
	for _, p := range keys(before) {
		if _, ok := after[p]; !ok {
			t.Errorf("%s was removed", p)
		}
	}
}

// TestStore_Delete checks that a deleted session leaves no file behind, and
// neither does a session replaced after its TTL.
func TestStore_Delete(t *testing.T) {
	dir := t.TempDir()
	clock := storetest.NewClock()
	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns, TTL: 3600e9, Now: clock.Now})
	for _, id := range []string{"gone", "expired"} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(t.Context(), id, 0, storetest.Conversation(0, "r", "x")...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	if where := file.JournalsHolding(t, filepath.Join(dir, ns), "gone"); len(where) > 0 {
		t.Errorf("after Delete %v still name the session", where)
	}
	if got, want := keys(tree(t, filepath.Join(dir, ns))), []string{".", "expired", "expired/ack.json", "expired/events.jsonl",
		"expired/info.json", "expired/lock", "expired/meta.json", "expired/" + file.SearchName}; !slices.Equal(got, want) {
		t.Errorf("after Delete the namespace folder holds %v, want %v", got, want)
	}
	clock.Advance(2 * 3600e9)
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "expired"}); err != nil {
		t.Fatalf("Create over an expired session: %v", err)
	}
	if n, err := s.Sweep(t.Context()); err != nil || n != 0 {
		t.Errorf("Sweep = %d, %v; want 0, nil", n, err)
	}
	clock.Advance(2 * 3600e9)
	if n, err := s.Sweep(t.Context()); err != nil || n != 1 {
		t.Errorf("Sweep = %d, %v; want 1, nil", n, err)
	}
	if got := keys(tree(t, filepath.Join(dir, ns))); !slices.Equal(got, []string{"."}) {
		t.Errorf("after Sweep the namespace folder holds %v, want nothing", got)
	}
}

// TestStore_TwoStores races writers of two stores on one folder, as two
// processes would, at the same expected seq, round after round: exactly
// one wins each round and the history stays dense.
func TestStore_TwoStores(t *testing.T) {
	const rounds, writers = 12, 4
	dir := t.TempDir()
	a := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	b := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	const id = "raced"
	if err := a.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	var winners []string
	for round := range rounds {
		expect := int64(round)
		won, errs := storetest.Race(2*writers, cairn.ErrConflict, func(w int) (string, error) {
			s, tag := a, fmt.Sprintf("r%d-a%d", round, w)
			if w%2 == 1 {
				s, tag = b, fmt.Sprintf("r%d-b%d", round, w)
			}
			return tag, s.Append(t.Context(), id, expect, storetest.Custom(expect+1, tag))
		})
		if len(errs) > 0 {
			t.Fatalf("round %d: errors other than ErrConflict: %v", round, errs)
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d writers won (%v), want exactly 1", round, len(won), won)
		}
		winners = append(winners, won[0])
	}
	for _, s := range []cairn.Store{a, b} {
		rec := mustLoad(t, s, id)
		checkSeqs(t, rec.Events, rounds)
		for i, e := range rec.Events {
			if want := fmt.Sprintf("%q", winners[i]); !strings.Contains(string(e.Data), want) {
				t.Fatalf("seq %d = %s, want the winner %s", e.Seq, e.Data, winners[i])
			}
		}
		if rec.Info.LastSeq != rounds {
			t.Errorf("info last seq = %d, want %d", rec.Info.LastSeq, rounds)
		}
	}
}

// TestStore_DeleteRace deletes a session from one store while another
// store's writers append to it: every append either lands before the
// delete or gets ErrNotFound, and no append brings the session back.
func TestStore_DeleteRace(t *testing.T) {
	dir := t.TempDir()
	a := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	b := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	for round := range 10 {
		id := fmt.Sprintf("del-%d", round)
		if err := a.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		wg.Go(func() {
			for i := int64(0); i < 20; i++ {
				err := b.Append(t.Context(), id, i, storetest.Custom(i+1, "w"))
				if errors.Is(err, cairn.ErrNotFound) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			if err := a.Delete(t.Context(), id); err != nil {
				errs <- err
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := b.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("round %d: Load after Delete: got %v, want ErrNotFound", round, err)
		}
		if err := b.Append(t.Context(), id, 0, storetest.Custom(1, "late")); !errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("round %d: late Append: got %v, want ErrNotFound", round, err)
		}
	}
	if got := keys(tree(t, filepath.Join(dir, ns))); !slices.Equal(got, []string{"."}) {
		t.Errorf("after the deletes the namespace folder holds %v, want nothing", got)
	}
}
