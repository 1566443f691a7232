package fault

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/memory"
)

// echoServer answers every line with the same line, upper-cased.
func echoServer(t *testing.T) string {
	t.Helper()
	return testenv.Serve(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if _, err := io.WriteString(c, strings.ToUpper(line)); err != nil {
				return
			}
		}
	})
}

func newTestProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := NewProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// ask sends line and returns the answer, or the read error.
func ask(c net.Conn, r *bufio.Reader, line string, wait time.Duration) (string, error) {
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	defer c.SetReadDeadline(time.Time{})
	s, err := r.ReadString('\n')
	return strings.TrimSuffix(s, "\n"), err
}

func TestProxy_Forwards(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p)
	for _, w := range []string{"a", "bc", strings.Repeat("x", 100_000)} {
		got, err := ask(c, r, w, 10*time.Second)
		if err != nil || got != strings.ToUpper(w) {
			t.Fatalf("ask %.10q: %.10q, %v", w, got, err)
		}
	}
	if s := p.Stats(); s.Conns != 1 {
		t.Errorf("stats %+v; want 1 connection", s)
	}
}

func TestProxy_CutResetsAndRefuses(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p)
	if _, err := ask(c, r, "before", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if _, err := ask(c, r, "during", 10*time.Second); !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Errorf("an open connection after the cut: %v; want a reset", err)
	}
	// The kernel accepts a new connection and the proxy resets it at once
	// (the dial itself may see the reset).
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		defer c2.Close()
		if _, err := ask(c2, bufio.NewReader(c2), "new", 10*time.Second); err == nil {
			t.Error("a new connection got an answer while cut")
		}
	}
	p.Heal()
	c3, r3 := dial(t, p)
	if got, err := ask(c3, r3, "after", 10*time.Second); err != nil || got != "AFTER" {
		t.Errorf("after heal: %q, %v", got, err)
	}
	if s := p.Stats(); s.Cuts != 1 || s.Reset < 2 {
		t.Errorf("stats %+v; want 1 cut and 2 connections reset", s)
	}
}

// TestProxy_StallHoldsBytes checks that a stall holds a request without
// losing it: no answer while stalled, the answer once released, and a
// request sent by a client that then closed still reaches the server.
func TestProxy_StallHoldsBytes(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p)
	p.Stall(0)
	if _, err := ask(c, r, "held", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("answer while stalled: %v; want none (a read deadline)", err)
	}
	c2, r2 := dial(t, p) // accepted while stalled, held as well
	if _, err := ask(c2, r2, "new", 100*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a new connection answered while stalled: %v", err)
	}
	p.Release()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "HELD\n" {
		t.Fatalf("after release: %q, %v; want the held request's answer", got, err)
	}
	_ = c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := r2.ReadString('\n'); err != nil || got != "NEW\n" {
		t.Fatalf("after release, new connection: %q, %v", got, err)
	}
}

// TestProxy_StallReplies checks that a stall of the replies lets requests
// through (the server acts on them) and holds the answers.
func TestProxy_StallReplies(t *testing.T) {
	got := make(chan string, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
		_, _ = io.WriteString(c, "done\n")
	}()
	p, err := NewProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, r := dial(t, p)
	p.StallReplies()
	if _, err := ask(c, r, "apply", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a reply while the replies are stalled: %v", err)
	}
	if line := <-got; line != "apply\n" {
		t.Fatalf("the server got %q; want the request", line)
	}
	until(t, func() bool { _, rep := p.HeldBytes(); return rep == len("done\n") })
	p.Cut() // the reply is lost
	p.Heal()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := r.ReadString('\n'); err == nil {
		t.Errorf("the client got %q after the cut; want the reply lost", line)
	}
}

// TestProxy_ReleaseRequests checks that a stall of both directions can
// let the requests go and keep holding the replies.
func TestProxy_ReleaseRequests(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p)
	p.Stall(0)
	if _, err := io.WriteString(c, "req\n"); err != nil {
		t.Fatal(err)
	}
	until(t, func() bool { req, _ := p.HeldBytes(); return req == len("req\n") })
	p.ReleaseRequests()
	until(t, func() bool { req, rep := p.HeldBytes(); return req == 0 && rep == len("REQ\n") })
	p.Release()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "REQ\n" {
		t.Fatalf("after release: %q, %v", line, err)
	}
}

// TestProxy_StallAt checks that small requests pass and the first large
// one begins a stall.
func TestProxy_StallAt(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p)
	p.StallAt(100)
	if got, err := ask(c, r, "small", 10*time.Second); err != nil || got != "SMALL" {
		t.Fatalf("a small request: %q, %v", got, err)
	}
	big := strings.Repeat("b", 200)
	if _, err := ask(c, r, big, 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a large request was answered: %v", err)
	}
	if req, _ := p.HeldBytes(); req != len(big)+1 {
		t.Errorf("held %d bytes of requests, want %d", req, len(big)+1)
	}
	p.Release()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != strings.ToUpper(big)+"\n" {
		t.Fatalf("after release: %.20q, %v", got, err)
	}
}

func TestProxy_StallForEnds(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p)
	p.Stall(50 * time.Millisecond)
	if got, err := ask(c, r, "later", 10*time.Second); err != nil || got != "LATER" {
		t.Fatalf("a timed stall: %q, %v; want the answer once it ended", got, err)
	}
}

func TestProxy_CutDropsHeldBytes(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p)
	p.Stall(0)
	if _, err := io.WriteString(c, "lost\n"); err != nil {
		t.Fatal(err)
	}
	until(t, func() bool { return p.Held() > 0 })
	p.Cut()
	p.Heal()
	if _, err := ask(c, r, "x", 10*time.Second); err == nil {
		t.Error("the connection survived a cut")
	}
	until(t, func() bool { return p.Stats().Dropped > 0 }) // counted by the forwarding goroutine
}

func TestProxy_Delay(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p)
	p.Delay(30 * time.Millisecond)
	begin := time.Now()
	if got, err := ask(c, r, "slow", 10*time.Second); err != nil || got != "SLOW" {
		t.Fatalf("delayed: %q, %v", got, err)
	}
	// Both directions wait 30 ms: the answer cannot come sooner than 60 ms
	// (a lower bound, which no load can break).
	if d := time.Since(begin); d < 60*time.Millisecond {
		t.Errorf("a round trip through a 30-ms delay took %s; want at least 60 ms", d)
	}
}

func TestServerAddr(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@db/x":           "db:5432",
		"redis://127.0.0.1:6380/0":    "127.0.0.1:6380",
		"mongodb://127.0.0.1/":        "127.0.0.1:27017",
		"postgresql://h:1/x?sslmode=": "h:1",
	} {
		if got, err := ServerAddr(in); err != nil || got != want {
			t.Errorf("ServerAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ServerAddr("sqlite:///x.db"); err == nil {
		t.Error("ServerAddr of a sqlite URL: no error")
	}
}

func TestProcess_KillStopCont(t *testing.T) {
	p := Start(t, exec.Command("sleep", "30"))
	p.Stop()
	p.Cont()
	p.Kill()
	if e := p.Wait(); !e.Killed() || e.Code != -1 {
		t.Errorf("exit %+v; want killed by SIGKILL", e)
	}
	e := Start(t, exec.Command("sh", "-c", "echo out; echo err >&2; exit 3")).Wait()
	if e.Code != 3 || e.Stdout != "out\n" || e.Stderr != "err\n" || e.Killed() {
		t.Errorf("exit %+v; want 3 with the output", e)
	}
}

func TestSmallDisk_Fill(t *testing.T) {
	dir := SmallDisk(t, 1<<20)
	filler := Fill(t, dir, 0)
	err := os.WriteFile(filepath.Join(dir, "x"), make([]byte, 8192), 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full tmpfs: %v; want ENOSPC", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), make([]byte, 8192), 0o600); err != nil {
		t.Fatalf("write once freed: %v", err)
	}
}

func TestNoSpace(t *testing.T) {
	mem, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full := false
	st := NoSpace(mem, func() bool { return full })
	if err := st.Create(t.Context(), cairn.SessionMeta{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	full = true
	err = st.Append(t.Context(), "s", 0)
	if !errors.Is(err, syscall.ENOSPC) || cairn.IsUnavailable(err) {
		t.Errorf("append on a full disk: %v; want ENOSPC, not an outage", err)
	}
	if _, ok := st.(cairn.Leaser); !ok {
		t.Error("NoSpace of a store with leases has none")
	}
	if _, err := st.Load(t.Context(), "s", 0); err != nil {
		t.Errorf("load on a full disk: %v", err)
	}
	sn, ok := st.(cairn.Snapshotter)
	if !ok {
		t.Fatal("NoSpace of a store with snapshots has none")
	}
	if err := sn.PutSnapshot(t.Context(), "s", cairn.Snapshot{Seq: 1, Data: []byte("x")}); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("put snapshot on a full disk: %v; want ENOSPC", err)
	}
	if snap, err := sn.LoadSnapshot(t.Context(), "s"); err != nil || snap != nil {
		t.Errorf("load snapshot on a full disk: %v, %v; want none", snap, err)
	}
	// Each combination of leases and snapshots carries what the store has.
	for name, inner := range map[string]cairn.Store{
		"neither": struct{ cairn.Store }{mem},
		"leases": struct {
			cairn.Store
			cairn.Leaser
		}{mem, mem},
		"snapshots": struct {
			cairn.Store
			cairn.Snapshotter
		}{mem, mem},
	} {
		w := NoSpace(inner, func() bool { return false })
		_, l := w.(cairn.Leaser)
		_, sn := w.(cairn.Snapshotter)
		_, wantL := inner.(cairn.Leaser)
		_, wantSn := inner.(cairn.Snapshotter)
		if l != wantL || sn != wantSn {
			t.Errorf("NoSpace of a store with %s: leases %v, snapshots %v", name, l, sn)
		}
	}
}

func until(t *testing.T, cond func() bool) {
	t.Helper()
	Until(t, 10*time.Second, "the condition", func() (bool, error) { return cond(), nil })
}
