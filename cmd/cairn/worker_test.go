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

// TestWorker_MemoryNamespace: a run queued with --memory-ns records the
// namespace on its session (the cairn.memory label), and the worker runs
// it with that namespace's tools and the memories that match its prompt
// in front of it, as `cairn run --memory-ns` would; a run queued without
// one gets neither.
func TestWorker_MemoryNamespace(t *testing.T) {
	c := newCLIEnv(t)
	save := "script:" + c.writeFile("save.json", `{"steps": [
		{"tool_calls": [{"name": "memory_save", "arguments": {"key": "food", "text": "Ada's favourite food is pizza"}}]},
		{"text": "noted"}]}`)
	search := "script:" + c.writeFile("search.json", `{"steps": [
		{"tool_calls": [{"name": "memory_search", "arguments": {"query": "pizza"}}]},
		{"text": "margherita"}]}`)
	c.must("--model", save, "run", "--session", "day-1", "--memory-ns", "users/ada", "I love pizza")
	c.must("--model", search, "run", "--detach", "--session", "queued-ada", "--memory-ns", "users/ada", "what pizza should I order")
	c.must("--model", search, "run", "--detach", "--session", "queued-plain", "what pizza should I order")
	if out := c.must("--json", "sessions", "show", "queued-ada"); !strings.Contains(out, `"cairn.memory": "users/ada"`) {
		t.Errorf("the queued session does not record its namespace:\n%s", out)
	}

	w, log := c.start("--model", search, "worker", "--poll", "50ms")
	st, err := cairn.Open(t.Context(), "sqlite:///"+c.dir+"/.cairn/cairn.db", cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(30 * time.Second)
	waitCompleted(t, st, deadline, log, "queued-ada", "queued-plain")
	if err := w.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.Wait()

	ada := c.must("sessions", "show", "queued-ada", "--transcript")
	for _, want := range []string{"Long-term memories that may be relevant:", "- food: Ada's favourite food is pizza", "memory_search", "margherita"} {
		if !strings.Contains(ada, want) {
			t.Errorf("the session queued with users/ada lacks %q:\n%s", want, ada)
		}
	}
	plain := c.must("--json", "sessions", "show", "queued-plain", "--transcript")
	if strings.Contains(plain, "Long-term memories") || !strings.Contains(plain, "unknown tool") {
		t.Errorf("the session queued without a namespace: want no recall and memory_search unknown:\n%s", plain)
	}
}
