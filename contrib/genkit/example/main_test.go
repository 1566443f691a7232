package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
)

// built compiles the example once, into a folder removed by TestMain.
var built = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "genkit-example-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "example")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// build returns the example's binary.
func build(t *testing.T) string {
	t.Helper()
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// runJSON runs the example in dir with args and decodes its --json output.
func runJSON(t *testing.T, bin, dir string, args ...string) Output {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"--json"}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("example %v: %v\n%s", args, err, stderr.String())
	}
	var out Output
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("example output %q: %v", raw, err)
	}
	return out
}

// TestExample runs the example twice as processes on each store: the
// second run sees the first's message. With no --store it uses the SQLite
// file in its working directory.
func TestExample(t *testing.T) {
	bin := build(t)
	cases := []struct {
		name, env string
	}{
		{"default", ""},
		{"postgres", "CAIRN_TEST_POSTGRES"},
		{"redis", "CAIRN_TEST_REDIS"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var store []string
			if c.env != "" {
				url := os.Getenv(c.env)
				if url == "" {
					t.Skipf("%s is not set: set it to a %s server's URL to run this test", c.env, c.name)
				}
				store = []string{"--store", url, "--namespace", "genkitex_" + cairn.NewID()[24:]}
			}
			args := func(msg string) []string { return append(append([]string{}, store...), "--session", "demo", msg) }
			first := runJSON(t, bin, dir, args("hello")...)
			if first.Turn != 1 || first.Reply != `you have told me 1 thing(s): "hello"` {
				t.Fatalf("first run = %+v", first)
			}
			second := runJSON(t, bin, dir, args("what did I say?")...)
			want := []string{
				"user: hello",
				`model: you have told me 1 thing(s): "hello"`,
				"user: what did I say?",
				`model: you have told me 2 thing(s): "hello", "what did I say?"`,
			}
			if second.Turn != 2 || strings.Join(second.History, "\n") != strings.Join(want, "\n") {
				t.Fatalf("second run = %+v; want turn 2, history %q", second, want)
			}
			if c.env == "" {
				if _, err := os.Stat(filepath.Join(dir, ".cairn", "cairn.db")); err != nil {
					t.Errorf("the default store's file: %v", err)
				}
			}
		})
	}
}

// TestExample_BadArgs: no message is refused, with the usage.
func TestExample_BadArgs(t *testing.T) {
	bin := build(t)
	cmd := exec.CommandContext(t.Context(), bin)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "give one message") {
		t.Errorf("no message: %v, %s; want an error asking for one", err, out)
	}
}
