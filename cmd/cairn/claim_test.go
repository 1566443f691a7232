//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	_ "github.com/cairnhq/cairn/store/all"
)

// claimScript writes a script whose first answer is quick and whose later
// ones take a while, so a second process can try the session meanwhile.
func claimScript(c *cliEnv) string {
	return c.writeFile("slow.json", `{"steps":[{"text":"first"},{"text":"second","delay_ms":2000},{"text":"third","delay_ms":2000},{"text":"fourth"}]}`)
}

// waitLocked waits until the session's lock file names a holder.
func waitLocked(t *testing.T, dir, id string) {
	t.Helper()
	locked := within(30*time.Second, 20*time.Millisecond, func() bool {
		for _, pat := range []string{".cairn/cairn.db.locks/*/" + id + ".lock", ".cairn/cairn.db.locks/" + id + ".lock"} {
			m, _ := filepath.Glob(filepath.Join(dir, pat))
			for _, f := range m {
				if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
					return true
				}
			}
		}
		return false
	})
	if !locked {
		t.Fatalf("session %s was never locked", id)
	}
}

// resumeHeld runs session s1 once with claimScript's model, then starts
// `cairn sessions resume s1`, whose answer is slow, and waits until it
// holds the session's lock.
func resumeHeld(t *testing.T) (c *cliEnv, script string, a *exec.Cmd) {
	t.Helper()
	c = newCLIEnv(t)
	script = claimScript(c)
	c.must("--model", "script:"+script, "run", "--session", "s1", "hello")
	a, _ = c.start("--model", "script:"+script, "sessions", "resume", "s1", "one more")
	waitLocked(t, c.dir, "s1")
	return c, script, a
}

// TestResume_Concurrent: two `cairn sessions resume ID` at once on a local
// store: one proceeds, the other stops at once saying the session is being
// run elsewhere, and the history does not fork.
func TestResume_Concurrent(t *testing.T) {
	c, script, a := resumeHeld(t)
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
	c, script, a := resumeHeld(t)
	// Kill once the resumed run has started, so there is a run to finish.
	started := within(30*time.Second, 10*time.Millisecond, func() bool {
		s, ok := c.show("s1")
		return ok && s.Info.Status == "running"
	})
	if !started {
		a.Process.Kill()
		t.Fatal("the resumed run never started")
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
	script := claimScript(c)
	base := []string{"--store", url, "--namespace", ns, "--model", "script:" + script}
	c.must(append(base, "run", "--session", "s1", "hello")...)
	a, aOut := c.start(append(base, "sessions", "resume", "s1", "one more")...)
	st, err := cairn.Open(t.Context(), url, cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	leased := within(30*time.Second, 20*time.Millisecond, func() bool {
		l, err := st.(cairn.Leaser).CurrentLease(t.Context(), "s1")
		return err == nil && l.Holder != ""
	})
	if !leased {
		t.Fatal("the first resume never took the lease")
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
	if err := a.Wait(); err == nil || !strings.Contains(aOut.String(), "lease lost") {
		t.Errorf("the stalled resume after the takeover: %v, output %q; want a failure saying the lease was lost", err, aOut.String())
	}
	after := loadSession(t, url, ns, "s1")
	if len(after) != len(before) {
		t.Errorf("the process taken over wrote %d events after the takeover", len(after)-len(before))
	}
}
