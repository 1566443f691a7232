package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/storetest"
)

// plainStore hides the leases of the store it wraps: a store without
// cairn.Leaser.
type plainStore struct{ cairn.Store }

func claimAgent(t *testing.T, st cairn.Store) *agent.Agent {
	steps := make([]script.Step, 40)
	for i := range steps {
		steps[i] = script.Step{Text: fmt.Sprintf("answer %d", i)}
	}
	return &agent.Agent{Name: "t", Model: scripted(t, steps...), Store: st, Logger: quietLogger()}
}

// TestSession_Claim_Concurrent: 16 goroutines resume one session and try to
// claim it at once; exactly one gets it, the others are told who holds it,
// and the history never forks.
func TestSession_Claim_Concurrent(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   func(t *testing.T) cairn.Store
		lock bool
	}{
		{"lease", func(t *testing.T) cairn.Store { return testcheck.MemoryStore(t) }, false},
		{"lockfile", func(t *testing.T) cairn.Store { return plainStore{testcheck.MemoryStore(t)} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st(t)
			a := claimAgent(t, st)
			s, err := a.Start(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Run(t.Context(), "first"); err != nil {
				t.Fatal(err)
			}
			lockPath := ""
			if tc.lock {
				lockPath = filepath.Join(t.TempDir(), s.ID()+".lock")
			}
			const n = 16
			var (
				tried, wg sync.WaitGroup
				mu        sync.Mutex
				won       int
				held      []error
				other     []error
			)
			tried.Add(n)
			for i := range n {
				wg.Go(func() {
					rs, err := a.Resume(context.Background(), s.ID())
					if err != nil {
						tried.Done()
						mu.Lock()
						other = append(other, err)
						mu.Unlock()
						return
					}
					c, err := rs.Claim(context.Background(), agent.ClaimOptions{Holder: fmt.Sprintf("g%d", i), LockFile: lockPath})
					tried.Done()
					tried.Wait() // every claim is tried while the winner holds its own
					mu.Lock()
					switch {
					case err == nil:
						won++
					case errors.Is(err, cairn.ErrLeaseHeld):
						held = append(held, err)
					default:
						other = append(other, err)
					}
					mu.Unlock()
					if err != nil {
						return
					}
					defer c.Release(context.Background())
					if _, err := rs.Run(context.Background(), "turn", agent.Continue()); err != nil {
						mu.Lock()
						other = append(other, err)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if len(other) > 0 {
				t.Fatalf("unexpected errors: %v", other)
			}
			if won != 1 || len(held) != n-1 {
				t.Fatalf("%d claims won and %d were refused, want 1 and %d", won, len(held), n-1)
			}
			if msg := held[0].Error(); !strings.Contains(msg, "being run elsewhere") || !strings.Contains(msg, "g") {
				t.Errorf("refusal %q does not say the session is run elsewhere, by whom", msg)
			}
			evs := loadEvents(t, st, s.ID())
			if got := len(decoded[cairn.RunStarted](t, evs, cairn.KindRunStarted)); got != 2 {
				t.Errorf("%d runs in the history, want 2 (the first and the winner's)", got)
			}
			if _, err := cairn.NewMemory(evs...); err != nil {
				t.Errorf("history is not valid: %v", err)
			}
		})
	}
}

// TestClaim_Takeover: a holder taken over with Force cannot write any more,
// and the history holds only the new holder's run.
func TestClaim_Takeover(t *testing.T) {
	st := testcheck.MemoryStore(t)
	a := claimAgent(t, st)
	s, err := a.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	old, err := s.Claim(t.Context(), agent.ClaimOptions{Holder: "old", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Release(t.Context())
	s2, err := a.Resume(t.Context(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Claim(t.Context(), agent.ClaimOptions{Holder: "new"}); !errors.Is(err, cairn.ErrLeaseHeld) {
		t.Fatalf("claim of a held session: got %v, want ErrLeaseHeld", err)
	}
	c2, err := s2.Claim(t.Context(), agent.ClaimOptions{Holder: "new", Force: true})
	if err != nil {
		t.Fatalf("forced claim: %v", err)
	}
	defer c2.Release(t.Context())
	if _, err := s.Run(t.Context(), "stale writer"); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Fatalf("run by the holder taken over: got %v, want ErrLeaseLost", err)
	}
	if n := len(loadEvents(t, st, s.ID())); n != 0 {
		t.Fatalf("the holder taken over wrote %d events", n)
	}
	res, err := s2.Run(t.Context(), "new writer")
	if err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("run by the new holder: %v, %v", res, err)
	}
	if l, ok := c2.Lease(); !ok || l.Holder != "new" {
		t.Errorf("Lease() = %+v, %v", l, ok)
	}
}

// TestClaim_LockFileReleasedOnKill: a process that holds a session's lock
// file and is killed with SIGKILL frees the session at once.
func TestClaim_LockFileReleasedOnKill(t *testing.T) {
	if os.Getenv("CAIRN_LOCK_CHILD") != "" {
		return
	}
	lockPath := filepath.Join(t.TempDir(), "s.lock")
	child := exec.Command(os.Args[0], "-test.run=^TestClaimLockChild$")
	child.Env = append(os.Environ(), "CAIRN_LOCK_CHILD="+lockPath)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "locked") {
		child.Process.Kill()
		child.Wait()
		t.Fatalf("child said %q, want locked", buf[:n])
	}
	st := plainStore{testcheck.MemoryStore(t)}
	a := claimAgent(t, st)
	s, err := a.Start(t.Context(), agent.WithID("s"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Claim(t.Context(), agent.ClaimOptions{LockFile: lockPath})
	if !errors.Is(err, cairn.ErrLeaseHeld) || !strings.Contains(err.Error(), "child-holder") {
		t.Fatalf("claim while the child holds the lock: got %v, want ErrLeaseHeld naming child-holder", err)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	c, err := s.Claim(t.Context(), agent.ClaimOptions{LockFile: lockPath})
	if err != nil {
		t.Fatalf("claim after the holder was killed: %v", err)
	}
	if err := c.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestClaimLockChild is the child process of TestClaim_LockFileReleasedOnKill.
func TestClaimLockChild(t *testing.T) {
	path := os.Getenv("CAIRN_LOCK_CHILD")
	if path == "" {
		t.Skip("run by TestClaim_LockFileReleasedOnKill")
	}
	st := plainStore{testcheck.MemoryStore(t)}
	s, err := claimAgent(t, st).Start(context.Background(), agent.WithID("s"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(context.Background(), agent.ClaimOptions{Holder: "child-holder", LockFile: path}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("locked")
	time.Sleep(time.Minute)
}

// TestClaim_FileStoreLockFile: on a file store, which has leases, a claim
// takes the store's lock file and takes over the lease a dead process of
// this machine left (the lock, free, and its process ID, gone, prove it
// dead) instead of waiting for it to expire, and fences the dead holder's
// writes. A lease whose holder may be alive (a name that is not this
// machine's and a process ID) is refused, naming its holder.
func TestClaim_FileStoreLockFile(t *testing.T) {
	dir := t.TempDir()
	st, err := file.Open(t.Context(), filepath.Join(dir, "sessions"), cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := claimAgent(t, st)
	s, err := a.Start(t.Context(), agent.WithID("s"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "first"); err != nil {
		t.Fatal(err)
	}
	// What a process killed while it ran the session leaves: its lease,
	// and no lock (the kernel released it).
	other, err := st.Acquire(t.Context(), "s", "elsewhere", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(t.Context(), agent.ClaimOptions{Holder: "me"}); !errors.Is(err, cairn.ErrLeaseHeld) ||
		!strings.Contains(err.Error(), "elsewhere") {
		t.Fatalf("claim of a lease that may be live: got %v, want ErrLeaseHeld naming elsewhere", err)
	}
	if err := st.Release(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	dead, err := st.Acquire(t.Context(), "s", deadHolder(t), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(t.Context(), agent.ClaimOptions{Holder: "me"})
	if err != nil {
		t.Fatalf("claim of a dead process's lease: %v", err)
	}
	l, ok := c.Lease()
	if !ok || l.Holder != "me" || l.Token <= dead.Token {
		t.Errorf("Lease() = %+v, %v; want me's lease with a token above %d", l, ok, dead.Token)
	}
	if _, err := s.Run(t.Context(), "second", agent.Continue()); err != nil {
		t.Fatalf("run under the claim: %v", err)
	}
	n := len(loadEvents(t, st, "s"))
	if err := st.AppendFenced(t.Context(), "s", dead, int64(n), storetest.Custom(int64(n)+1, "late")); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("AppendFenced by the dead process's lease: got %v, want ErrLeaseLost", err)
	}
	if err := c.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if cur, err := st.CurrentLease(t.Context(), "s"); err != nil || cur.Holder != "" {
		t.Errorf("CurrentLease after Release = %+v, %v; want none", cur, err)
	}
}

// deadHolder names a holder as agent.DefaultHolder would name a process of
// this machine that has exited.
func deadHolder(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s:%d", host, cmd.Process.Pid)
}
