//go:build unix

package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// TestLockFile_OneStoreOneLock: every name of one local store, a symbolic
// link to it, a relative path, "./", a link to its folder, gives the same
// lock file; another store or namespace gives another, and a store that
// is not on this machine's disk none.
func TestLockFile_OneStoreOneLock(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "data", "real.db")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "data"), filepath.Join(dir, "datalink")); err != nil {
		t.Fatal(err)
	}
	sessions := filepath.Join(dir, "sessions")
	if err := os.Mkdir(sessions, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sessions, filepath.Join(dir, "sessions-link")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	lockOf := func(u, ns string) string {
		t.Helper()
		st, err := cairn.Open(t.Context(), u, cairn.StoreOptions{Namespace: ns})
		if err != nil {
			t.Fatalf("open %s: %v", u, err)
		}
		defer st.Close()
		return lockFile(st, "s1")
	}
	want := lockOf("sqlite://"+real, "default")
	if want == "" || !strings.HasSuffix(want, filepath.Join("data", "real.db.locks", "default", "s1.lock")) {
		t.Fatalf("lock file of %s = %q", real, want)
	}
	for _, u := range []string{
		"sqlite://" + filepath.Join(dir, "link.db"),
		"sqlite:///./link.db",
		"sqlite:///./data/real.db",
		"sqlite:data/real.db",
		"sqlite:./data/../data/real.db",
		"sqlite://" + filepath.Join(dir, "datalink", "real.db"),
		"sqlite:datalink/real.db",
	} {
		if got := lockOf(u, ""); got != want {
			t.Errorf("lock file of %s = %q, want %q", u, got, want)
		}
	}
	wantDir := lockOf("file://"+sessions, "default")
	if !strings.HasSuffix(wantDir, filepath.Join("sessions.locks", "default", "s1.lock")) {
		t.Errorf("lock file of %s = %q", sessions, wantDir)
	}
	for _, u := range []string{"file:///./sessions", "file:sessions-link", "file://localhost" + filepath.Join(dir, "sessions-link")} {
		if got := lockOf(u, "default"); got != wantDir {
			t.Errorf("lock file of %s = %q, want %q", u, got, wantDir)
		}
	}
	if other := lockOf("sqlite:///./other.db", "default"); other == want {
		t.Errorf("another store shares the lock file %s", other)
	}
	if other := lockOf("sqlite://"+real, "other"); other == want {
		t.Errorf("another namespace shares the lock file %s", other)
	}
	if got := lockOf("memory:", "default"); got != "" {
		t.Errorf("lock file of memory: = %q, want none", got)
	}
}

// TestRun_SymlinkedStoreSharesTheLock: a second `cairn run --session same`
// through a symbolic link to the SQLite file a live run uses, or through a
// relative path to it, is refused, naming that process, and writes
// nothing; with --force it takes the session over, and the first
// process's later writes are refused. The first run is held inside a tool
// call (append_file to a named pipe that nobody reads yet), outside any
// write, so nothing here depends on timing.
func TestRun_SymlinkedStoreSharesTheLock(t *testing.T) {
	c := newCLIEnv(t)
	fifo := filepath.Join(c.dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	script := c.writeFile("script.json", `{"steps":[{"text":"first"},
		{"tool_calls":[{"name":"append_file","arguments":{"path":"`+fifo+`","line":"held"}}]},
		{"text":"done"},{"text":"done again"},{"text":"and again"}]}`)
	if err := os.Mkdir(filepath.Join(c.dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(c.dir, "data", "real.db")
	if err := os.Symlink(real, filepath.Join(c.dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	viaReal := []string{"--store", "sqlite://" + real, "--model", "script:" + script}
	viaLink := []string{"--store", "sqlite:///./link.db", "--model", "script:" + script}
	c.must(append(viaReal, "run", "--session", "same", "hello")...)
	a, aOut := c.start(append(viaReal, "run", "--session", "same", "one more")...)
	waitKind(t, "sqlite://"+real, "same", cairn.KindToolStarted)
	before := loadSession(t, "sqlite://"+real, "", "same")

	for _, via := range [][]string{viaLink, {"--store", "sqlite:data/real.db", "--model", "script:" + script}} {
		_, errOut, code := c.run(append(via, "run", "--session", "same", "through another name")...)
		if code != 1 || !strings.Contains(errOut, "session same is being run elsewhere") || !strings.Contains(errOut, ":"+strconv.Itoa(a.Process.Pid)) || !strings.Contains(errOut, "--force") {
			t.Errorf("run through %s: exit %d, stderr %q; want exit 1 naming process %d and a --force hint", via[1], code, errOut, a.Process.Pid)
		}
	}
	if after := loadSession(t, "sqlite://"+real, "", "same"); len(after) != len(before) {
		t.Fatalf("the refused runs wrote %d events", len(after)-len(before))
	}

	_, errOut, code := c.run(append(viaLink, "run", "--session", "same", "--force", "taken over")...)
	if code != 0 || !strings.Contains(errOut, "warning: taking session same over from") {
		t.Fatalf("run --force: exit %d, stderr %q; want exit 0 and a warning naming the holder", code, errOut)
	}
	taken := loadSession(t, "sqlite://"+real, "", "same")
	// Let the first run's tool call finish: its next write is refused.
	r, err := os.Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(r)
	r.Close()
	if err := a.Wait(); err == nil || !strings.Contains(aOut.String(), "lease lost") && !strings.Contains(aOut.String(), "lease could not be renewed") {
		t.Errorf("the run taken over: %v, output %q; want a failure saying the lease was lost", err, aOut.String())
	}
	if after := loadSession(t, "sqlite://"+real, "", "same"); len(after) != len(taken) {
		t.Errorf("the process taken over wrote %d events after the takeover", len(after)-len(taken))
	}

	// And a third process, now that the session is free, runs it.
	if _, errOut, code := c.run(append(viaLink, "run", "--session", "same", "free now")...); code != 0 {
		t.Errorf("run after both ended: exit %d: %s", code, errOut)
	}
}

// waitKind waits until a session holds an event of kind.
func waitKind(t *testing.T, storeURL, id string, kind cairn.Kind) {
	t.Helper()
	held := within(60*time.Second, 20*time.Millisecond, func() bool {
		return countKind(loadSession(t, storeURL, "", id), kind) > 0
	})
	if !held {
		t.Fatalf("session %s never held a %s event", id, kind)
	}
}

// TestClaim_LiveLeaseNeedsForce: on a local store, a session whose lease a
// live holder keeps without the lock file (a program, or a process that
// took it over with --force) is not taken over by run, chat or resume
// unless --force is given; the refusal names the holder and writes
// nothing. A lease left by a dead process of this machine is taken over at
// once.
func TestClaim_LiveLeaseNeedsForce(t *testing.T) {
	c := newCLIEnv(t)
	c.must("run", "--session", "s", "hello")
	url := "sqlite://" + filepath.Join(c.dir, ".cairn", "cairn.db")
	st, err := cairn.Open(t.Context(), url, cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := st.(cairn.Leaser)
	lease, err := l.Acquire(t.Context(), "s", "elsewhere:1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	before := loadSession(t, url, "", "s")
	for _, args := range [][]string{
		{"run", "--session", "s", "more"},
		{"chat", "--session", "s"},
		{"sessions", "resume", "s", "more"},
	} {
		cmd := c.command(args...)
		cmd.Stdin = strings.NewReader("more\n")
		_, stderr, code := c.result(cmd)
		if code == 0 || !strings.Contains(stderr, "session s is being run elsewhere: elsewhere:1 holds its lease") || !strings.Contains(stderr, "--force") {
			t.Errorf("%v: exit %d, stderr %q; want a refusal naming elsewhere:1 with a --force hint", args, code, stderr)
		}
	}
	if after := loadSession(t, url, "", "s"); len(after) != len(before) {
		t.Fatalf("the refused commands wrote %d events", len(after)-len(before))
	}

	cmd := c.command("chat", "--session", "s", "--force")
	cmd.Stdin = strings.NewReader("taken over\n")
	if _, stderr, code := c.result(cmd); code != 0 || !strings.Contains(stderr, "warning: taking session s over from elsewhere:1") {
		t.Fatalf("chat --force: exit %d, stderr %q; want a takeover with a warning", code, stderr)
	}
	e := cairn.MustEvent(cairn.KindCustom, "x", cairn.Custom{Type: "test.late", Payload: []byte(`1`)})
	last := loadSession(t, url, "", "s")
	e.Seq = int64(len(last)) + 1
	if err := l.AppendFenced(t.Context(), "s", lease, int64(len(last)), e); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("the old holder's write after the takeover: %v, want ErrLeaseLost", err)
	}

	// A dead process of this machine: its lease is taken over at once.
	host, _ := os.Hostname()
	if _, err := l.Takeover(t.Context(), "s", host+":999999999", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := c.run("run", "--session", "s", "after a crash"); code != 0 {
		t.Errorf("run over a dead process's lease: exit %d: %s", code, errOut)
	}
}
