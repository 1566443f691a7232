package main

import (
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
	storeURL, base, ids := c.queueRuns(`{"steps":[{"text":"done","delay_ms":600}]}`, 3)

	w, log := c.start(append(base, "worker", "--name", "file-worker", "--poll", "100ms")...)
	deadline := time.Now().Add(30 * time.Second)
	var out string
	held := within(time.Until(deadline), 20*time.Millisecond, func() bool {
		out = c.must(append(base, "sessions", "list")...)
		return strings.Contains(out, "HOLDER") && strings.Contains(out, "file-worker")
	})
	if !held {
		t.Fatalf("sessions list never showed the worker as a holder; last output:\n%s", out)
	}

	st, err := cairn.Open(t.Context(), storeURL, cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	waitCompleted(t, st, deadline, log, ids...)

	if err := w.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
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
