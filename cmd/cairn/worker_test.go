package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// TestWorker_FileStore: `cairn worker` accepts a file store, which has
// leases: it finishes every session queued with `cairn run --detach`, and
// while it runs one, `cairn sessions list` names it in the HOLDER column.
func TestWorker_FileStore(t *testing.T) {
	c := newCLIEnv(t)
	script := filepath.Join(c.dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"steps":[{"text":"done","delay_ms":600}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	storeURL := "file://" + filepath.Join(c.dir, "sessions")
	base := []string{"--store", storeURL, "--model", "script:" + script}
	var ids []string
	for i := range 3 {
		out, errOut, code := c.run(append(base, "run", "--detach", fmt.Sprintf("task %d", i))...)
		if code != 0 {
			t.Fatalf("run --detach: exit %d: %s", code, errOut)
		}
		ids = append(ids, strings.TrimSpace(out))
	}

	w := c.command(append(base, "worker", "--name", "file-worker", "--poll", "100ms")...)
	var log strings.Builder
	w.Stdout, w.Stderr = &log, &log
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			_ = w.Process.Kill()
			_ = w.Wait()
		}
	}()

	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errOut, code := c.run(append(base, "sessions", "list")...)
		if code != 0 {
			t.Fatalf("sessions list: exit %d: %s", code, errOut)
		}
		if strings.Contains(out, "HOLDER") && strings.Contains(out, "file-worker") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions list never showed the worker as a holder; last output:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}

	st, err := cairn.Open(t.Context(), storeURL, cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range ids {
		for {
			rec, err := st.Load(t.Context(), id, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Info.Status == cairn.StatusCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %s is %s, want completed", id, rec.Info.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	if err := w.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = w.Wait()
	exited = true
	if err != nil {
		t.Errorf("worker after SIGTERM: %v, want a clean exit\n%s", err, log.String())
	}
	if n := strings.Count(log.String(), "msg=finished"); n != len(ids) {
		t.Errorf("the worker finished %d sessions, want %d:\n%s", n, len(ids), log.String())
	}
	for _, id := range ids {
		if l, err := st.(cairn.Leaser).CurrentLease(t.Context(), id); err != nil || l.Holder != "" {
			t.Errorf("lease of %s after the worker stopped = %+v, %v; want released", id, l, err)
		}
	}
}
