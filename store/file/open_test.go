package file

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

const openChildEnv = "CAIRN_FILE_TEST_OPEN_CHILD"

// TestOpen_ManyProcesses opens one new store folder from many processes
// (this test binary again) at the same moment, round after round: in each
// round every process opens the round's new folder, creates a session of
// its own, appends to it and closes the store. They make the folder, the
// namespace's folder and the journal folder, and take journals, at the
// same time.
func TestOpen_ManyProcesses(t *testing.T) {
	if os.Getenv(openChildEnv) != "" {
		openChild(t)
		return
	}
	const procs, rounds = 6, 60
	children := startChildren(t, "TestOpen_ManyProcesses", procs)
	for round := range rounds {
		path := filepath.Join(t.TempDir(), "store")
		for i, msg := range children.round(path) {
			if msg != "ok" {
				t.Errorf("round %d, process %d: %s", round, i, msg)
			}
		}
		if t.Failed() {
			return
		}
		s, err := Open(t.Context(), path, cairn.StoreOptions{})
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

// openChild is one process of TestOpen_ManyProcesses: for each path it
// reads, it opens the store there, creates and appends to its session, and
// answers "ok" or what failed.
func openChild(t *testing.T) {
	newJournalSize = minJournalSize // each process makes a journal: a small one
	id := "p" + os.Getenv(openChildEnv)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		err := func() error {
			s, err := Open(t.Context(), in.Text(), cairn.StoreOptions{})
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
				return err
			}
			return s.Append(t.Context(), id, 0, storetest.Custom(1, id))
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

// startChildren starts n processes of the test named test, with the child
// variable set to their number.
func startChildren(t *testing.T, test string, n int) *children {
	t.Helper()
	c := &children{t: t}
	for i := range n {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), openChildEnv+"="+strconv.Itoa(i))
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
