package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestChat_PTY drives `cairn chat` in a pseudo-terminal as a person would:
// a message, Ctrl+C, a restart with --resume, and the earlier message is
// remembered.
func TestChat_PTY(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	c := newCLIEnv(t)
	first := c.startPTY("chat")
	first.expect("> ")
	first.send("Hello, my name is Ada\r")
	first.expect(`You said "Hello, my name is Ada"`)
	first.expect("> ")
	first.send("\x03") // Ctrl+C
	if code := first.wait(); code != 130 {
		t.Fatalf("chat after Ctrl+C exited %d, want 130\n%s", code, first.output())
	}
	first.expect("cairn chat --resume")

	second := c.startPTY("chat", "--resume")
	second.expect("message(s) so far")
	second.expect("> ")
	second.send("What is my name?\r")
	second.expect(`Before that you told me "Hello, my name is Ada"`)
	second.expect("> ")
	second.send("\x04") // Ctrl+D
	if code := second.wait(); code != 0 {
		t.Fatalf("chat after Ctrl+D exited %d, want 0\n%s", code, second.output())
	}
}

type ptyProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	f    *os.File
	mu   sync.Mutex
	buf  bytes.Buffer
	pos  int
	done chan struct{}
}

// startPTY starts cairn in a pseudo-terminal that edits nothing itself
// (TERM=dumb): the line editor stays off.
func (c *cliEnv) startPTY(args ...string) *ptyProc {
	c.t.Helper()
	return c.startTerm("dumb", args...)
}

// startTerm starts cairn in a pseudo-terminal of 24 rows and 100 columns
// whose TERM is term.
func (c *cliEnv) startTerm(term string, args ...string) *ptyProc {
	t := c.t
	t.Helper()
	cmd := c.command(args...)
	cmd.Env = append(cmd.Env[:len(cmd.Env):len(cmd.Env)], "TERM="+term)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 100})
	if err != nil {
		t.Fatalf("start %v in a pty: %v", args, err)
	}
	p := &ptyProc{t: t, cmd: cmd, f: f, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		b := make([]byte, 4096)
		for {
			n, err := f.Read(b)
			p.mu.Lock()
			p.buf.Write(b[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		f.Close()
	})
	return p
}

func (p *ptyProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// expect waits until s appears in the output after what earlier expects
// consumed.
func (p *ptyProc) expect(s string) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		out := p.buf.String()
		if i := strings.Index(out[p.pos:], s); i >= 0 {
			p.pos += i + len(s)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		select {
		case <-p.done:
			// The process ended; look once more at everything it wrote.
			p.mu.Lock()
			out = p.buf.String()
			ok := strings.Contains(out[p.pos:], s)
			if ok {
				p.pos += strings.Index(out[p.pos:], s) + len(s)
			}
			p.mu.Unlock()
			if ok {
				return
			}
			p.t.Fatalf("process ended before %q appeared; output:\n%s", s, out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.t.Fatalf("timed out waiting for %q; output:\n%s", s, p.output())
}

func (p *ptyProc) send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.f, s); err != nil {
		p.t.Fatalf("write to pty: %v", err)
	}
}

func (p *ptyProc) wait() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second): // a guard against a hang, not a measure
		_ = p.cmd.Process.Kill()
		p.t.Fatalf("the process did not end; output:\n%s", p.output())
	}
	code, err := exitStatus(p.cmd.Wait())
	<-p.done
	if err != nil {
		p.t.Fatalf("wait: %v", err)
	}
	return code
}

// TestDelete_AsksOnATerminal: on a terminal, delete asks first; "n" keeps
// the session, "y" erases it.
func TestDelete_AsksOnATerminal(t *testing.T) {
	c := newCLIEnv(t)
	c.must("run", "--session", "precious", "keep me")
	p := c.startPTY("sessions", "delete", "precious")
	p.expect("Erase session precious for good? [y/N]")
	p.send("n\r")
	if code := p.wait(); code != 0 {
		t.Fatalf("declined delete exited %d\n%s", code, p.output())
	}
	if _, ok := c.show("precious"); !ok {
		t.Fatal("the session is gone after answering n")
	}
	p = c.startPTY("sessions", "delete", "precious")
	p.expect("[y/N]")
	p.send("y\r")
	p.expect("deleted precious")
	if code := p.wait(); code != 0 {
		t.Fatalf("confirmed delete exited %d\n%s", code, p.output())
	}
	if _, ok := c.show("precious"); ok {
		t.Fatal("the session is still there after answering y")
	}
}
