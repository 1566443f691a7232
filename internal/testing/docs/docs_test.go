// Package docs checks the Go code in README.md and docs/: each block is a
// complete program, which the test builds, or says on its first line which
// complete program it is a fragment of.
package docs

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A block that is not a whole program begins with one of these lines:
//
//	// A fragment of PATH …   (PATH, from the repository's root, exists)
//	// Not cairn's code: …    (another project's API, shown for reference)
var (
	fragmentOf = regexp.MustCompile(`^// A fragment of ([^\s,;:]+)`)
	notOurs    = regexp.MustCompile(`^// Not cairn's code: `)
)

type block struct {
	file string // from the repository's root
	line int    // of the opening fence
	code string
}

func blocks(t *testing.T, root string) []block {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []block
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		rel, _ := filepath.Rel(root, f)
		var cur *block
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			switch {
			case cur == nil && strings.TrimSpace(line) == "```go":
				cur = &block{file: rel, line: n}
			case cur != nil && strings.TrimSpace(line) == "```":
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				cur.code += line + "\n"
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if cur != nil {
			t.Errorf("%s:%d: a Go block that is never closed", rel, cur.line)
		}
	}
	return out
}

// TestDocs_GoBlocks builds every complete program in README.md and docs/
// in a package of its own inside this module (so that it imports cairn as
// it is here), and checks that every other block names the program it is
// a fragment of.
func TestDocs_GoBlocks(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	all := blocks(t, root)
	if len(all) == 0 {
		t.Fatal("no Go block found in README.md and docs/")
	}
	var programs []block
	for _, b := range all {
		first, _, _ := strings.Cut(b.code, "\n")
		switch {
		case strings.HasPrefix(b.code, "package main\n"):
			programs = append(programs, b)
		case fragmentOf.MatchString(first):
			path := fragmentOf.FindStringSubmatch(first)[1]
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(path))); err != nil {
				t.Errorf("%s:%d: the block is a fragment of %s, which is not in the repository", b.file, b.line, path)
			}
		case notOurs.MatchString(first):
		default:
			t.Errorf("%s:%d: a Go block is a complete program (package main) or begins with `// A fragment of PATH` naming one; this one begins %q", b.file, b.line, first)
		}
	}
	if len(programs) == 0 {
		t.Fatal("no complete program among the Go blocks")
	}
	// The programs are written under testdata (which ./... leaves out)
	// and built one by one, each a package of its own.
	dir, err := os.MkdirTemp("testdata", "programs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for i, b := range programs {
		pkg := filepath.Join(dir, fmt.Sprintf("p%d", i))
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(b.code), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "vet", "./"+filepath.ToSlash(pkg))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s:%d: the program does not build: %v\n%s", b.file, b.line, err, out)
		}
	}
	t.Logf("%d Go blocks: %d complete programs built, %d fragments", len(all), len(programs), len(all)-len(programs))
}
