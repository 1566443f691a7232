package eino_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds the example and the cairn command once for the tests
// and returns their paths.
func binaries(t *testing.T) (example, cairnCmd string) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "cairn-eino-bin-")
		if buildErr != nil {
			return
		}
		for _, b := range []struct{ dir, pkg, out string }{
			{".", "./example", "example"},
			{"../..", "./cmd/cairn", "cairn"},
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, b.out), b.pkg)
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = &buildError{b.pkg, string(out), err}
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "example"), filepath.Join(binDir, "cairn")
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

// run runs bin with args and returns its exit status and output.
func run(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stdout.String(), stderr.String()
	} else if err != nil {
		t.Fatalf("run %s: %v", bin, err)
	}
	return 0, stdout.String(), stderr.String()
}

// TestExample runs the example program as the docs give it, on each
// backend: the first run stops at the approval (exit 4, as `cairn run`
// exits for a session waiting for approval), a second process resumes it
// from the store and finishes (exit 0), and `cairn sessions show
// --transcript` shows the graph's model and tool calls.
func TestExample(t *testing.T) {
	example, cairnCmd := binaries(t)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			url, _, id, file := graphSession(t, b, "example")

			code, stdout, stderr := run(t, example, "--store", url, "--session", id, "--file", file)
			if code != 4 || !strings.Contains(stdout, "is waiting for approval of: append_line") {
				t.Fatalf("the first run: exit %d\nstdout: %s\nstderr: %s\nwant exit 4, waiting for approval", code, stdout, stderr)
			}
			code, stdout, stderr = run(t, example, "--store", url, "--session", id, "--file", file, "--approve")
			if code != 0 || !strings.Contains(stdout, "finished: done: appended hello from eino") {
				t.Fatalf("the approved run: exit %d\nstdout: %s\nstderr: %s\nwant exit 0, finished", code, stdout, stderr)
			}
			if got := lines(t, file); len(got) != 1 || got[0] != "hello from eino" {
				t.Fatalf("the file holds %q; want the line once", got)
			}

			code, stdout, stderr = run(t, cairnCmd, "sessions", "show", id, "--transcript", "--store", url)
			if code != 0 {
				t.Fatalf("cairn sessions show: exit %d\n%s%s", code, stdout, stderr)
			}
			for _, want := range []string{
				"user: hello from eino",
				`assistant: → append_line({"line":"hello from eino"}) [call_append_1]`,
				"run: interrupted (approval)",
				"approval: call_append_1 approved",
				"tool: append_line started [call_append_1]",
				"tool: append_line result [call_append_1]: appended hello from eino",
				"assistant: done: appended hello from eino",
				"run: finished completed",
			} {
				if !strings.Contains(stdout, want) {
					t.Errorf("the transcript lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

// TestExample_Usage checks that bad command lines exit 2 with a message
// naming what is wrong.
func TestExample_Usage(t *testing.T) {
	example, _ := binaries(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--session", "x"}, "--store is required"},
		{[]string{"--store", "memory:"}, "--session is required"},
		{[]string{"--store", "memory:", "--session", "a/b"}, `--session "a/b"`},
		{[]string{"--store", "nope://x", "--session", "a"}, `unknown scheme "nope"`},
		{[]string{"--store", "memory:", "--session", "a", "extra"}, `unexpected argument "extra"`},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
	} {
		code, _, stderr := run(t, example, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("example %q: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
