package storetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// PathOpener opens the store kept at path, a file or folder on this
// machine's disk, with opts. The caller closes the store.
type PathOpener func(ctx context.Context, path string, opts cairn.StoreOptions) (cairn.Store, error)

// LocalLockFiles checks the driver.LocalLocker of a store kept at a path
// on this machine's disk: a folder (dir) or a file, named name. The lock
// file of a session is beside the store's real path, whatever name the
// store is opened by (its real path, a symbolic link to it, a relative
// path), and per namespace; an ID that breaks the rules has none.
func LocalLockFiles(t *testing.T, name string, dir bool, open PathOpener) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real, link, relative := filepath.Join(root, name), "link-"+name, "./"+name
	if dir {
		relative += "/"
		err = os.Mkdir(real, 0o700)
	} else {
		err = os.WriteFile(real, nil, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, link)); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	lock := func(path, ns string) string {
		t.Helper()
		s, err := open(t.Context(), path, cairn.StoreOptions{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		l, ok := s.(driver.LocalLocker)
		if !ok {
			t.Fatalf("%T is not a driver.LocalLocker", s)
		}
		if l.LockFile("../x") != "" {
			t.Errorf("LockFile(../x) = %q, want none", l.LockFile("../x"))
		}
		return l.LockFile("s1")
	}
	want := filepath.Join(root, name+".locks", "default", "s1.lock")
	for _, p := range []string{real, link, relative} {
		if got := lock(p, ""); got != want {
			t.Errorf("LockFile of %s = %q, want %q", p, got, want)
		}
	}
	if got := lock(real, "other"); got != filepath.Join(root, name+".locks", "other", "s1.lock") {
		t.Errorf("LockFile in namespace other = %q", got)
	}
}

// OpenTogether opens one new store from many processes at the same
// moment, round after round, for a store kept in a local file or folder:
// the making of the file or folder, and what a store sets up in it, must
// bear being done by several processes at once.
//
// The test that calls it runs again as procs processes of the test binary,
// each with the variable env set to its number; in them OpenTogether is
// the child's part. In each round every child opens the round's new path
// (name in a new temporary folder) with open, creates a session of its
// own, appends an event to it and closes the store; then the test opens
// the path and wants every child's session there with its one
// event.
func OpenTogether(t *testing.T, env string, procs, rounds int, name string, open PathOpener) {
	if n := os.Getenv(env); n != "" {
		openChild(t, "p"+n, open)
		return
	}
	children := startChildren(t, env, procs)
	for round := range rounds {
		path := filepath.Join(t.TempDir(), name)
		for i, msg := range children.round(path) {
			if msg != "ok" {
				t.Errorf("round %d, process %d: %s", round, i, msg)
			}
		}
		if t.Failed() {
			return
		}
		s, err := open(t.Context(), path, cairn.StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range procs {
			rec, err := s.Load(t.Context(), "p"+strconv.Itoa(i), 0)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if len(rec.Events) != 1 {
				t.Fatalf("round %d: session p%d has %d events, want 1", round, i, len(rec.Events))
			}
		}
		s.Close()
	}
}

// openChild is one process of OpenTogether: for each path it reads, it
// opens the store there, creates and appends to session id, and answers
// "ok" or what failed.
func openChild(t *testing.T, id string, open PathOpener) {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		err := func() error {
			s, err := open(t.Context(), in.Text(), cairn.StoreOptions{})
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
				return err
			}
			return s.Append(t.Context(), id, 0, Custom(1, id))
		}()
		if err != nil {
			fmt.Println(strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			fmt.Println("ok")
		}
	}
}

// children are processes of one test that take their orders line by line.
type children struct {
	t    *testing.T
	in   []io.WriteCloser
	out  []*bufio.Reader
	errs []*bytes.Buffer
}

// startChildren starts n processes of the running test, with the variable
// env set to their number.
func startChildren(t *testing.T, env string, n int) *children {
	t.Helper()
	c := &children{t: t}
	for i := range n {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), env+"="+strconv.Itoa(i))
		errs := new(bytes.Buffer)
		cmd.Stderr = errs
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stdin.Close()
			_ = cmd.Wait()
		})
		c.in, c.out, c.errs = append(c.in, stdin), append(c.out, bufio.NewReader(stdout)), append(c.errs, errs)
	}
	return c
}

// round sends line to every child at once and returns their answers.
func (c *children) round(line string) []string {
	c.t.Helper()
	for _, w := range c.in {
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			c.t.Fatal(err)
		}
	}
	answers := make([]string, len(c.out))
	for i, r := range c.out {
		a, err := r.ReadString('\n')
		if err != nil {
			c.t.Fatalf("process %d: %v\n%s", i, err, c.errs[i])
		}
		answers[i] = strings.TrimSuffix(a, "\n")
	}
	return answers
}
