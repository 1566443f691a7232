package fault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildMu  sync.Mutex
	buildDir string
	builds   = map[string]string{} // package path → binary
)

// Build compiles the main package pkg (an import path, such as
// "github.com/cairnhq/cairn/cmd/cairn") once per test binary and returns
// the binary's path. RemoveBuilds, from TestMain, deletes the binaries.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := builds[pkg]; ok {
		if bin == "" {
			t.Fatalf("build %s failed earlier", pkg)
		}
		return bin
	}
	builds[pkg] = ""
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "cairn-fault-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = dir
	}
	bin := filepath.Join(buildDir, fmt.Sprintf("%d-%s", len(builds), filepath.Base(pkg)))
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	builds[pkg] = bin
	return bin
}

// RemoveBuilds deletes the binaries Build made. Call it from TestMain
// after the tests ran.
func RemoveBuilds() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
		buildDir = ""
		builds = map[string]string{}
	}
}

// Process is a child process started by Start, with its output captured.
type Process struct {
	cmd    *exec.Cmd
	stdout SyncBuffer
	stderr SyncBuffer
	done   chan struct{}
	exit   Exit
}

// Exit is how a process ended.
type Exit struct {
	Code   int            // exit status; -1 when a signal ended it
	Signal syscall.Signal // the signal that ended it, 0 if none
	Stdout string
	Stderr string
}

// Killed reports whether SIGKILL ended the process.
func (e Exit) Killed() bool { return e.Signal == syscall.SIGKILL }

// String describes the exit and the end of stderr, for test messages.
func (e Exit) String() string {
	how := fmt.Sprintf("exit %d", e.Code)
	if e.Signal != 0 {
		how = "killed by " + e.Signal.String()
	}
	return how + "\n" + e.Stderr
}

// Start starts cmd with its stdout and stderr captured (cmd.Stdout and
// cmd.Stderr, when set, get a copy). A process still running when the test
// ends is killed.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	p := &Process{cmd: cmd, done: make(chan struct{})}
	if cmd.Stdout != nil {
		cmd.Stdout = io.MultiWriter(cmd.Stdout, &p.stdout)
	} else {
		cmd.Stdout = &p.stdout
	}
	if cmd.Stderr != nil {
		cmd.Stderr = io.MultiWriter(cmd.Stderr, &p.stderr)
	} else {
		cmd.Stderr = &p.stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	go p.wait()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.Cont()
			p.Kill()
			<-p.done
		}
	})
	return p
}

func (p *Process) wait() {
	err := p.cmd.Wait()
	e := Exit{Stdout: p.stdout.String(), Stderr: p.stderr.String()}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		e.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal()
		}
	} else if err != nil {
		e.Code, e.Stderr = -1, e.Stderr+"\nwait: "+err.Error()
	}
	p.exit = e
	close(p.done)
}

// Pid returns the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL.
func (p *Process) Kill() { _ = p.cmd.Process.Signal(syscall.SIGKILL) }

// Terminate sends SIGTERM, the signal of a clean shutdown.
func (p *Process) Terminate() { _ = p.cmd.Process.Signal(syscall.SIGTERM) }

// Stop sends SIGSTOP: the process stays, frozen, with its connections
// open, until Cont. It panics on a system without SIGSTOP.
func (p *Process) Stop() { stop(p.cmd.Process) }

// Cont sends SIGCONT.
func (p *Process) Cont() { cont(p.cmd.Process) }

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the process to end and returns how.
func (p *Process) Wait() Exit {
	<-p.done
	return p.exit
}

// Stderr returns what the process wrote to stderr so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Stdout returns what the process wrote to stdout so far.
func (p *Process) Stdout() string { return p.stdout.String() }

// Until calls cond every few milliseconds until it returns true, and fails
// the test (naming what) when it has not after timeout, or when it returns
// an error. It returns how long it waited. Use it to land a fault at a
// point the store shows, such as a session's nth event.
func Until(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) time.Duration {
	t.Helper()
	d, err := UntilContext(t.Context(), timeout, cond)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return d
}

// UntilContext is Until without a test: it returns an error when cond
// fails, when timeout passes or when ctx ends first.
func UntilContext(ctx context.Context, timeout time.Duration, cond func() (bool, error)) (time.Duration, error) {
	begin := time.Now()
	deadline := begin.Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return time.Since(begin), err
		}
		if ok {
			return time.Since(begin), nil
		}
		if time.Now().After(deadline) {
			return time.Since(begin), fmt.Errorf("not so after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return time.Since(begin), ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// LastLine returns the last line of s that starts with prefix, or s
// trimmed when none does.
func LastLine(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], prefix) {
			return lines[i]
		}
	}
	return strings.TrimSpace(s)
}
