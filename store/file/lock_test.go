//go:build linux || darwin

package file

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

const lockChildEnv = "CAIRN_FILE_TEST_LOCK_CHILD"

func testEvent(seq int64) cairn.Event {
	e := cairn.MustEvent(cairn.KindCustom, "run", cairn.Custom{Type: "test.lock", Payload: []byte(`"x"`)})
	e.Seq, e.At = seq, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return e
}

// TestStore_LockReleasedOnKill has a child process take a session's lock
// through the store and get killed with SIGKILL while holding it: the lock
// is free as soon as the child is gone, and appends go on.
func TestStore_LockReleasedOnKill(t *testing.T) {
	const id = "locked"
	if dir := os.Getenv(lockChildEnv); dir != "" {
		holdLock(t, dir, id)
		return
	}
	dir := t.TempDir()
	s, err := Open(t.Context(), dir, cairn.StoreOptions{Namespace: "tests"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), id, 0, testEvent(1)); err != nil {
		t.Fatal(err)
	}

	child, out := startChild(t, "TestStore_LockReleasedOnKill", lockChildEnv, dir)
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("child said %q (%v), want \"locked\"", line, err)
	}

	lockPath := filepath.Join(dir, "tests", id, lockName)
	if tryLock(t, lockPath) {
		t.Fatal("the session's lock is free while the child holds it")
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err == nil {
		t.Fatal("the killed child exited cleanly")
	}
	if !tryLock(t, lockPath) {
		t.Fatal("the lock is still held after its holder was killed")
	}
	if err := s.Append(t.Context(), id, 1, testEvent(2)); err != nil {
		t.Fatalf("Append after the kill: %v", err)
	}
	rec, err := s.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Info.LastSeq != 2 || len(rec.Events) != 2 {
		t.Fatalf("after the kill: last seq %d, %d events; want 2, 2", rec.Info.LastSeq, len(rec.Events))
	}
}

// startChild runs the test binary's test of that name in a child process,
// with env set to dir, and returns it and its output. The child is killed
// when the test ends.
func startChild(t *testing.T, test, env, dir string) (*exec.Cmd, io.Reader) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	child.Env = append(os.Environ(), env+"="+dir)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	return child, out
}

// holdLock is the child's side: take the session's exclusive lock the way
// Append does, say so, and wait to be killed.
func holdLock(t *testing.T, dir, id string) {
	s, err := Open(t.Context(), dir, cairn.StoreOptions{Namespace: "tests"})
	if err != nil {
		t.Fatal(err)
	}
	ss := s.acquire(id)
	if err := s.lock(t.Context(), ss, id, true); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	time.Sleep(time.Hour)
}

// tryLock reports whether the file's lock can be taken now, and if so
// releases it again.
func tryLock(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// TestStore_RootIsASecondWall calls the store's inner operations with IDs
// that skipped validation: the os.Root refuses every path out of the
// store's folder, and nothing appears outside it.
func TestStore_RootIsASecondWall(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	s, err := Open(t.Context(), dir, cairn.StoreOptions{Namespace: "tests"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	for _, id := range []string{"../escape", "../../escape", "../../../escape", "/abs", "x/../../../escape", filepath.Join(parent, "escape")} {
		if err := s.create(ctx, cairn.SessionMeta{ID: id}); err == nil {
			t.Errorf("create(%q) succeeded", id)
		}
		if err := s.append(ctx, id, 0, []cairn.Event{testEvent(1)}, nil); err == nil {
			t.Errorf("append(%q) succeeded", id)
		}
		lease := cairn.Lease{Session: id, Holder: "h", Token: 1}
		if err := s.append(ctx, id, 0, []cairn.Event{testEvent(1)}, &lease); err == nil {
			t.Errorf("fenced append(%q) succeeded", id)
		}
		err := s.withLease(ctx, id, true, func(leaseFile, time.Time) (*leaseFile, error) {
			return &leaseFile{Format: leaseFormat, Version: 1, Session: id, Holder: "h", Token: 1}, nil
		})
		if err == nil {
			t.Errorf("withLease(%q) succeeded", id)
		}
		if _, err := s.load(ctx, id, 0); err == nil {
			t.Errorf("load(%q) succeeded", id)
		}
		if _, err := s.info(ctx, id); err == nil {
			t.Errorf("info(%q) succeeded", id)
		}
		if err := s.delete(ctx, id); err == nil {
			t.Errorf("delete(%q) succeeded", id)
		}
	}
	var got []string
	err = filepath.WalkDir(parent, func(p string, _ fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(parent, p)
		got = append(got, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{".", "store", "store/tests"}; !slices.Equal(got, want) {
		t.Errorf("after escaping IDs the folders hold %v, want %v", got, want)
	}
}
