//go:build linux || darwin

package file_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/storetest"
)

// snapSession makes session "s" with a conversation in a new store folder.
func snapSession(t *testing.T) (string, cairn.Store) {
	t.Helper()
	dir := t.TempDir()
	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), "s", 0, storetest.Conversation(0, "r1", "snapshot")...); err != nil {
		t.Fatal(err)
	}
	return dir, s
}

// TestSnapshot_File: the snapshot is a file in the session's folder, a
// header line then the bytes as given, replaced whole (no temporary file
// stays); it goes with the folder, and a put after Delete makes no
// folder.
func TestSnapshot_File(t *testing.T) {
	dir, s := snapSession(t)
	sn := s.(cairn.Snapshotter)
	data := []byte("état\x00\xff\n{}")
	for _, seq := range []int64{3, 16} {
		if err := sn.PutSnapshot(t.Context(), "s", cairn.Snapshot{Seq: seq, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ns, "s", "snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	head, rest, _ := bytes.Cut(b, []byte("\n"))
	if !bytes.Equal(rest, data) || !strings.Contains(string(head), `"format":"cairn.file.snapshot"`) || !strings.Contains(string(head), `"seq":16`) {
		t.Errorf("the snapshot file:\n%q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, ns, "s", "snapshot.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a temporary file stays beside the snapshot: %v", err)
	}
	if err := s.Delete(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	if err := sn.PutSnapshot(t.Context(), "s", cairn.Snapshot{Seq: 17, Data: data}); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("PutSnapshot after Delete: %v, want ErrNotFound", err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, ns))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != file.JournalDir && e.Name() != file.FeedName {
			t.Errorf("the namespace folder holds %s after the session's Delete", e.Name())
		}
	}
}

// TestSnapshot_Damaged: a snapshot file that does not read is an error
// naming it, which the session survives (it is not damaged: its events
// are intact); cairn.Restore folds the events, and the next put replaces
// the file, whatever seq it claimed.
func TestSnapshot_Damaged(t *testing.T) {
	dir, s := snapSession(t)
	sn := s.(cairn.Snapshotter)
	evs := storetest.Conversation(0, "r1", "snapshot")
	st, _ := cairn.Fold(evs)
	snap, err := st.Encode(evs[len(evs)-1])
	if err != nil {
		t.Fatal(err)
	}
	if err := sn.PutSnapshot(t.Context(), "s", snap); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ns, "s", "snapshot")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 1 // in the data: the checksum fails
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = sn.LoadSnapshot(t.Context(), "s")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "checksum") || errors.Is(err, cairn.ErrDamaged) {
		t.Fatalf("LoadSnapshot of a damaged file = %v, want an error naming %s and its checksum", err, path)
	}
	r, err := cairn.Restore(t.Context(), s, "s")
	if err != nil || r.Base != 0 || r.Ignored == nil || r.Info.LastSeq != 16 {
		t.Fatalf("Restore with a damaged snapshot file: %v, %+v", err, r)
	}
	low := cairn.Snapshot{Seq: 2, Data: []byte("lower")}
	if err := sn.PutSnapshot(t.Context(), "s", low); err != nil {
		t.Fatal(err)
	}
	if got, err := sn.LoadSnapshot(t.Context(), "s"); err != nil || got == nil || got.Seq != 2 || string(got.Data) != "lower" {
		t.Errorf("LoadSnapshot after a put over the damaged file = %v, %v", got, err)
	}
}

// TestSnapshot_Symlinks: links planted where the snapshot file and its
// temporary file belong, leading out of the store, are never followed:
// a load reads nothing through them, a put replaces the link or fails,
// and nothing outside changes.
func TestSnapshot_Symlinks(t *testing.T) {
	dir, s := snapSession(t)
	sn := s.(cairn.Snapshotter)
	outside := filepath.Join(t.TempDir(), "secret")
	const secret = "{\"format\":\"cairn.file.snapshot\",\"version\":1,\"session\":\"s\",\"seq\":5,\"size\":6,\"crc32c\":0}\nsecret"
	if err := os.WriteFile(outside, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, ns, "s")
	if err := os.Symlink(outside, filepath.Join(folder, "snapshot")); err != nil {
		t.Fatal(err)
	}
	if got, err := sn.LoadSnapshot(t.Context(), "s"); err == nil || got != nil {
		t.Errorf("LoadSnapshot through a link out of the store = %v, %v; want an error", got, err)
	}
	if err := sn.PutSnapshot(t.Context(), "s", cairn.Snapshot{Seq: 1, Data: []byte("mine")}); err != nil {
		t.Fatalf("PutSnapshot over a link: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(folder, "snapshot")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the link is still there after a put: %v", err)
	}
	if err := os.Symlink(outside, filepath.Join(folder, "snapshot.tmp")); err != nil {
		t.Fatal(err)
	}
	if err := sn.PutSnapshot(t.Context(), "s", cairn.Snapshot{Seq: 2, Data: []byte("through the link")}); err == nil {
		t.Error("PutSnapshot wrote through a temporary file linked out of the store")
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != secret {
		t.Errorf("the file outside the store changed: %q, %v", b, err)
	}
	if got, err := sn.LoadSnapshot(t.Context(), "s"); err != nil || got == nil || string(got.Data) != "mine" {
		t.Errorf("LoadSnapshot = %v, %v; want the snapshot put over the link", got, err)
	}
}
