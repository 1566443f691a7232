// Command mutate checks that the test suite catches a broken safety rule.
// Each mutation in mutations.go breaks one rule — a seq conflict check, ID
// validation, the outcome-unknown rule, the order of tool.started and the
// side effect, lease fencing, the refusal of plaintext in an encrypted
// store — in a copy of one source file handed to the compiler with
// `go test -overlay`, so the tree itself is never changed. The tests named
// for the mutation must then fail; a mutation they survive is a hole in the
// suite, and the command exits 1.
//
// Usage, from the repository's root:
//
//	go run ./internal/testing/mutate            # every mutation
//	go run ./internal/testing/mutate -run fence # those whose name matches
//	go run ./internal/testing/mutate -list      # print the list
//
// The tests of backends with a server need CAIRN_TEST_POSTGRES,
// CAIRN_TEST_REDIS and CAIRN_TEST_MONGODB, as for go test.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

func run() error {
	filter := flag.String("run", "", "only the mutations whose name matches this regular expression")
	list := flag.Bool("list", false, "print the mutations and the tests that must kill them, and exit")
	baselineRun := flag.Bool("baseline", true, "first run each mutation's tests on the unchanged code (they must pass); false when they have just passed, as in CI after its test step")
	flag.Parse()
	re, err := regexp.Compile(*filter)
	if err != nil {
		return fmt.Errorf("-run: %w", err)
	}
	var chosen []mutation
	for _, m := range mutations {
		if re.MatchString(m.Name) {
			chosen = append(chosen, m)
		}
	}
	if *list {
		for _, m := range chosen {
			fmt.Printf("%-28s %s\n%-28s killed by %s in ./%s\n", m.Name, m.Breaks, "", m.Tests, m.Pkg)
		}
		return nil
	}
	tmp, err := os.MkdirTemp("", "cairn-mutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// The tests must pass unmutated, or every mutation would look killed.
	baseline := map[string]bool{}
	for _, m := range chosen {
		key := m.Pkg + " " + m.Tests
		if baseline[key] || !*baselineRun {
			continue
		}
		baseline[key] = true
		out, failed, err := goTest(m, "")
		if err != nil || failed {
			return fmt.Errorf("the tests of mutation %s fail without it (%s in ./%s): %v\n%s", m.Name, m.Tests, m.Pkg, err, tail(out))
		}
	}

	survived := 0
	for i, m := range chosen {
		start := time.Now()
		overlay, err := m.overlay(tmp, i)
		if err != nil {
			return err
		}
		out, failed, err := goTest(m, overlay)
		switch {
		case err != nil:
			return fmt.Errorf("mutation %s: %w\n%s", m.Name, err, tail(out))
		case failed:
			fmt.Printf("killed    %-28s by %s (%s)\n", m.Name, m.Tests, time.Since(start).Round(time.Second))
		default:
			survived++
			fmt.Printf("SURVIVED  %-28s %s: %s in ./%s passed with it\n", m.Name, m.Breaks, m.Tests, m.Pkg)
		}
	}
	fmt.Printf("%d mutations, %d killed, %d survived\n", len(chosen), len(chosen)-survived, survived)
	if survived > 0 {
		return fmt.Errorf("%d mutation(s) survived: the suite does not catch the broken rule", survived)
	}
	return nil
}

// mutation breaks one safety rule by replacing Old with New, once, in File.
type mutation struct {
	Name   string // short, unique
	Breaks string // the rule it breaks, in words
	File   string // from the repository's root
	Old    string // must occur exactly once in File
	New    string
	Pkg    string // the package whose tests must kill it
	Tests  string // the -run pattern of those tests
}

// overlay writes the mutated file and the overlay that hands it to the
// compiler, and returns the overlay's path.
func (m mutation) overlay(dir string, i int) (string, error) {
	src, err := os.ReadFile(m.File)
	if err != nil {
		return "", fmt.Errorf("mutation %s: %w", m.Name, err)
	}
	if n := bytes.Count(src, []byte(m.Old)); n != 1 {
		return "", fmt.Errorf("mutation %s: the text to replace occurs %d times in %s, want once: update the mutation to the code", m.Name, n, m.File)
	}
	mutated := filepath.Join(dir, fmt.Sprintf("m%d_%s", i, filepath.Base(m.File)))
	if err := os.WriteFile(mutated, bytes.Replace(src, []byte(m.Old), []byte(m.New), 1), 0o644); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(m.File)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: mutated}})
	path := filepath.Join(dir, fmt.Sprintf("m%d.json", i))
	return path, os.WriteFile(path, b, 0o644)
}

// goTest runs the mutation's tests, with the overlay when given. It
// reports whether a test failed; a build failure is an error (a mutation
// that does not compile proves nothing).
func goTest(m mutation, overlay string) (string, bool, error) {
	args := []string{"test", "-count=1", "-run", m.Tests}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	args = append(args, "./"+m.Pkg)
	cmd := exec.Command("go", args...)
	out, err := cmd.CombinedOutput()
	s := string(out)
	switch {
	case err == nil:
		if strings.Contains(s, "[no tests to run]") {
			return s, false, fmt.Errorf("no test matches %q in ./%s", m.Tests, m.Pkg)
		}
		return s, false, nil
	case strings.Contains(s, "[build failed]") || strings.Contains(s, "[setup failed]"):
		return s, false, fmt.Errorf("the mutated package does not build")
	case strings.Contains(s, "--- FAIL") || strings.Contains(s, "panic:"):
		return s, true, nil
	}
	return s, false, fmt.Errorf("go test: %w", err)
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}
