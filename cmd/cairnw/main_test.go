package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	for _, c := range []struct {
		built, total, downloads int64
		want                    string
	}{
		{0, 699, 0, "cairnw: compiling and linking (7s)"},
		{0, 0, 12, "cairnw: downloading cairn's modules, 12 so far (7s)"},
		{212, 699, 40, "cairnw: 212 of at most 699 packages compiled (7s)"},
		{5, 0, 0, "cairnw: 5 packages compiled (7s)"},
	} {
		if got := progress(c.built, c.total, c.downloads, 7*time.Second+300*time.Millisecond); got != c.want {
			t.Errorf("progress(%d, %d) = %q, want %q", c.built, c.total, got, c.want)
		}
	}
}

func TestIsPackagePath(t *testing.T) {
	for line, want := range map[string]bool{
		"github.com/openai/openai-go/v3":        true,
		"net/http":                              true,
		"# github.com/cairnhq/cairn/cmd/cairn":  false,
		"cmd/cairn/main.go:3:2: undefined: x":   false,
		"go: downloading github.com/x/y v1.2.3": false,
		"":                                      false,
	} {
		if got := isPackagePath(line); got != want {
			t.Errorf("isPackagePath(%q) = %v, want %v", line, got, want)
		}
	}
}

// TestBuild builds cairn as cairnw does, with a progress line every
// millisecond: the lines come while the build runs, the binary answers,
// and its exit status is what cairnw returns.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "cairn")
	var out bytes.Buffer
	if err := build(t.Context(), root, bin, &out, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], "the first build compiles every dependency") ||
		!strings.HasPrefix(lines[1], "cairnw: ") || !strings.HasPrefix(lines[len(lines)-1], "cairnw: built in ") {
		t.Fatalf("the build said:\n%s", out.String())
	}
	version, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(version), "cairn ") {
		t.Fatalf("the binary built: version: %v\n%s", err, version)
	}
	if code := exe(bin, []string{"run", "--sesion", "x", "hi"}); code != 2 {
		t.Errorf("a usage error through cairnw: exit %d, want 2 as cairn's", code)
	}
}
