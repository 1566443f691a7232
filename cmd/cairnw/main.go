// Command cairnw builds cairn and runs it, saying what it is doing while
// the build takes long: the first build of cairn compiles every dependency
// (minutes on a small machine), and go run prints nothing until it is done.
//
//	go run ./cmd/cairnw run --session demo "Hello, my name is Ada"
//
// runs `cairn run --session demo "Hello, my name is Ada"`. cairnw needs the
// standard library alone, so that it starts in seconds; it builds
// ./cmd/cairn of the module it is in into the user's cache folder, prints a
// line on stderr every few seconds while the build runs (how many of
// cairn's packages are compiled, and for how long), and then runs the
// binary with the arguments, standard input and output, and exits with its
// status. A later run finds the build up to date in a second.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// every is how often a line says how the build is going.
const every = 5 * time.Second

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairnw:", err)
		return 1
	}
	bin, err := binPath(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairnw:", err)
		return 1
	}
	if err := build(context.Background(), root, bin, os.Stderr, every); err != nil {
		fmt.Fprintln(os.Stderr, "cairnw:", err)
		return 1
	}
	return exe(bin, args)
}

// binPath is where the binary is built: the user's cache folder, one file
// per module folder (root), so that two clones do not share one.
func binPath(root string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for the binary: %w", err)
	}
	name := "cairn-" + strings.NewReplacer("/", "_", "\\", "_", ":", "_").Replace(strings.Trim(root, "/\\"))
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return filepath.Join(dir, "cairn", "bin", name), nil
}

// moduleRoot is the folder of the go.mod that holds ./cmd/cairn.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m: %w (run cairnw from cairn's repository)", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// build runs `go build -v -o bin ./cmd/cairn` in the module folder root
// and, while it runs, writes a progress line to w every interval: the
// packages compiled so far of the ones cairn needs. Nothing is written for a build that ends within the
// first interval (one that was up to date).
func build(ctx context.Context, root, bin string, w io.Writer, interval time.Duration) error {
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	// The count of packages is read beside the build: on a machine that
	// has not downloaded cairn's modules yet, go list waits for them too.
	var total atomic.Int64
	go func() { total.Store(countDeps(root)) }()
	cmd := exec.CommandContext(ctx, "go", "build", "-v", "-o", bin, "./cmd/cairn")
	cmd.Dir = root
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	var built, downloads atomic.Int64
	var other strings.Builder // what go build says that is not a package's path: its errors
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case isPackagePath(line):
				built.Add(1)
			case strings.HasPrefix(line, "go: downloading "):
				downloads.Add(1)
			default:
				other.WriteString(line + "\n")
			}
		}
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	said := false
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			if !said {
				fmt.Fprintln(w, "cairnw: building cairn; the first build compiles every dependency and takes minutes, later ones a second")
				said = true
			}
			fmt.Fprintln(w, progress(built.Load(), total.Load(), downloads.Load(), time.Since(start)))
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("go build ./cmd/cairn: %w\n%s", err, other.String())
	}
	if said {
		fmt.Fprintf(w, "cairnw: built in %s\n", time.Since(start).Round(time.Second))
	}
	return nil
}

// countDeps is how many packages ./cmd/cairn needs, the standard library
// with them; 0 when go list cannot say.
func countDeps(root string) int64 {
	cmd := exec.Command("go", "list", "-deps", "./cmd/cairn")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return 0
	}
	return int64(strings.Count(string(out), "\n"))
}

// isPackagePath reports whether a line of go build -v is a package's
// import path (what -v prints as each is compiled), not a message.
func isPackagePath(line string) bool {
	return line != "" && !strings.ContainsAny(line, " \t:") && !strings.HasPrefix(line, "#")
}

// progress is the line written while the build runs. Packages found up
// to date are not listed by go build -v, so the count is of those
// compiled, and the total is an upper bound.
func progress(built, total, downloads int64, took time.Duration) string {
	t := took.Round(time.Second)
	if built == 0 && downloads > 0 {
		return fmt.Sprintf("cairnw: downloading cairn's modules, %d so far (%s)", downloads, t)
	}
	if built == 0 {
		return fmt.Sprintf("cairnw: compiling and linking (%s)", t)
	}
	if total <= 0 {
		return fmt.Sprintf("cairnw: %d packages compiled (%s)", built, t)
	}
	return fmt.Sprintf("cairnw: %d of at most %d packages compiled (%s)", built, total, t)
}

// exe runs the binary with args and returns its exit status. Ctrl+C and
// SIGTERM reach it (it shares the terminal's process group); cairnw waits.
func exe(bin string, args []string) int {
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.ExitCode() >= 0 {
			return ee.ExitCode()
		}
		return 130 // ended by a signal
	default:
		fmt.Fprintln(os.Stderr, "cairnw:", err)
		return 1
	}
}
