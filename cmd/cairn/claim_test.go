package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testenv"
	_ "github.com/cairnhq/cairn/store/all"
)

// claimScript writes a script whose first answer is quick and whose later
// ones take a while, so a second process can try the session meanwhile.
func claimScript(t *testing.T, dir string) string {
	p := filepath.Join(dir, "slow.json")
	err := os.WriteFile(p, []byte(`{"steps":[{"text":"first"},{"text":"second","delay_ms":2000},{"text":"third","delay_ms":2000},{"text":"fourth"}]}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitLocked waits until the session's lock file names a holder.
func waitLocked(t *testing.T, dir, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, pat := range []string{".cairn/cairn.db.locks/*/" + id + ".lock", ".cairn/cairn.db.locks/" + id + ".lock"} {
			m, _ := filepath.Glob(filepath.Join(dir, pat))
			for _, f := range m {
				if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("session %s was never locked", id)
}

func loadSession(t *testing.T, storeURL, ns, id string) []cairn.Event {
	t.Helper()
	st, err := cairn.Open(t.Context(), storeURL, cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cairn.NewMemory(rec.Events...); err != nil {
		t.Fatalf("the history is not one valid line: %v", err)
	}
	return rec.Events
}

func countKind(evs []cairn.Event, k cairn.Kind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// TestResume_Concurrent: two `cairn sessions resume ID` at once on a local
// store: one proceeds, the other stops at once saying the session is being
// run elsewhere, and the history does not fork.
func TestResume_Concurrent(t *testing.T) {
	c := newCLIEnv(t)
	script := claimScript(t, c.dir)
	if _, errOut, code := c.run("--model", "script:"+script, "run", "--session", "s1", "hello"); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, errOut)
	}
	a := c.command("--model", "script:"+script, "sessions", "resume", "s1", "one more")
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	waitLocked(t, c.dir, "s1")
	_, errOut, code := c.run("--model", "script:"+script, "sessions", "resume", "s1", "and another")
	if code != 1 || !strings.Contains(errOut, "session s1 is being run elsewhere") {
		t.Errorf("second resume: exit %d, stderr %q; want exit 1 and \"session s1 is being run elsewhere\"", code, errOut)
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("first resume: %v", err)
	}
	evs := loadSession(t, "sqlite:///"+filepath.Join(c.dir, ".cairn", "cairn.db"), "", "s1")
	if got := countKind(evs, cairn.KindRunStarted); got != 2 {
		t.Errorf("%d runs recorded, want 2 (the first and one resume)", got)
	}
}

// TestResume_AfterKill: a resume killed with SIGKILL leaves no claim
// behind on a local store: the next resume proceeds at once and finishes
// the run.
func TestResume_AfterKill(t *testing.T) {
	c := newCLIEnv(t)
	script := claimScript(t, c.dir)
	if _, errOut, code := c.run("--model", "script:"+script, "run", "--session", "s1", "hello"); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, errOut)
	}
	a := c.command("--model", "script:"+script, "sessions", "resume", "s1", "one more")
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	waitLocked(t, c.dir, "s1")
	// Kill once the resumed run has started, so there is a run to finish.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if s, ok := c.show("s1"); ok && s.Info.Status == "running" {
			break
		}
		if time.Now().After(deadline) {
			a.Process.Kill()
			t.Fatal("the resumed run never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait()
	out, errOut, code := c.run("--model", "script:"+script, "sessions", "resume", "s1")
	if code != 0 {
		t.Fatalf("resume after SIGKILL: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "second") {
		t.Errorf("resume after SIGKILL printed %q, want the run's answer \"second\"", out)
	}
}

// TestResume_Force: on a shared store the claim is a lease; a resume
// stalled with SIGSTOP keeps it, a second resume is refused naming the
// holder, --force takes over with a warning, and the stalled process,
// once resumed, cannot write.
func TestResume_Force(t *testing.T) {
	url := testenv.URL(t, testenv.Postgres)
	c := newCLIEnv(t)
	ns := "claim_" + strings.ReplaceAll(t.Name(), "/", "_") + "_" + time.Now().Format("150405.000000")
	ns = strings.ReplaceAll(ns, ".", "_")
	script := claimScript(t, c.dir)
	base := []string{"--store", url, "--namespace", ns, "--model", "script:" + script}
	if _, errOut, code := c.run(append(base, "run", "--session", "s1", "hello")...); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, errOut)
	}
	a := c.command(append(base, "sessions", "resume", "s1", "one more")...)
	var aErr strings.Builder
	a.Stderr = &aErr
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := cairn.Open(t.Context(), url, cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := st.(cairn.Leaser).CurrentLease(t.Context(), "s1")
		if err == nil && l.Holder != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first resume never took the lease")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer a.Process.Signal(syscall.SIGCONT)
	_, errOut, code := c.run(append(base, "sessions", "resume", "s1", "again")...)
	if code != 1 || !strings.Contains(errOut, "being run elsewhere") || !strings.Contains(errOut, "--force") {
		t.Errorf("resume of a held session: exit %d, stderr %q; want exit 1, the holder and a --force hint", code, errOut)
	}
	_, errOut, code = c.run(append(base, "sessions", "resume", "s1", "--force", "taken over")...)
	if code != 0 || !strings.Contains(errOut, "warning: taking session s1 over from") {
		t.Errorf("resume --force: exit %d, stderr %q; want exit 0 and a warning", code, errOut)
	}
	before := loadSession(t, url, ns, "s1")
	if err := a.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err == nil || !strings.Contains(aErr.String(), "lease lost") {
		t.Errorf("the stalled resume after the takeover: %v, stderr %q; want a failure saying the lease was lost", err, aErr.String())
	}
	after := loadSession(t, url, ns, "s1")
	if len(after) != len(before) {
		t.Errorf("the process taken over wrote %d events after the takeover", len(after)-len(before))
	}
}
