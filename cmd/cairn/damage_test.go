package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// The damaged-storage repros, through the real binary: a byte changed in a
// stored event (file and sqlite), an unreadable meta.json with `sessions
// list` and `cairn worker` going on, a corrupt SQLite page with `doctor`.
// (A log cut short is testdata/script/damaged_file.txtar.)

// flipIn changes the byte at offset off of the first place where marker
// is in the file at path, after which it must not be found again.
func flipIn(t *testing.T, path, marker string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(marker))
	if i < 0 {
		t.Fatalf("%q is not in %s", marker, path)
	}
	b[i+off] ^= 0x20
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDamage_FlippedByte changes one letter inside a string of a stored
// event: `sessions show` says the session is damaged and names the seq
// (the event's checksum), `run` on it stops, `doctor` names it, and the
// other session goes on. On the file store and on SQLite.
func TestDamage_FlippedByte(t *testing.T) {
	for _, backend := range []string{"file", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			c := newCLIEnv(t)
			store, data := "file://"+filepath.Join(c.dir, "store"), filepath.Join(c.dir, "store", "default", "hit", "events.jsonl")
			if backend == "sqlite" {
				store, data = "sqlite://"+filepath.Join(c.dir, "c.db"), filepath.Join(c.dir, "c.db")
			}
			mustRun(t, c, "--store", store, "run", "--session", "hit", "the quick brown fox")
			mustRun(t, c, "--store", store, "run", "--session", "kept", "another question")
			// The user message in its event (the session's first message,
			// kept apart on SQLite, has no "text" key before it).
			flipIn(t, data, `"text":"the quick brown fox`, len(`"text":"the q`))

			out, errOut, code := c.run("--store", store, "sessions", "show", "hit")
			if code != 1 || !strings.Contains(errOut, "session hit is damaged") || !strings.Contains(errOut, "seq 4") ||
				!strings.Contains(errOut, "checksum") {
				t.Errorf("sessions show hit: exit %d\n%s%s\nwant exit 1 naming the damage at seq 4 and the checksum", code, out, errOut)
			}
			if _, errOut, code := c.run("--store", store, "run", "--session", "hit", "more"); code == 0 || !strings.Contains(errOut, "damaged") {
				t.Errorf("run on the damaged session: exit %d\n%s\nwant a failure naming the damage", code, errOut)
			}
			mustRun(t, c, "--store", store, "run", "--session", "kept", "one more")
			out, _, code = c.run("--store", store, "doctor")
			if code != 1 || !strings.Contains(out, "FAIL session  session hit is damaged") || strings.Contains(out, "session kept") {
				t.Errorf("doctor: exit %d\n%s\nwant exit 1 naming hit and not kept", code, out)
			}
		})
	}
}

// TestDamage_UnreadableMeta writes garbage over one queued session's
// meta.json and info.json: `sessions list` lists it as damaged beside the
// others, and `cairn worker` runs the others instead of stalling on it.
func TestDamage_UnreadableMeta(t *testing.T) {
	c := newCLIEnv(t)
	script := filepath.Join(c.dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"steps":[{"text":"done"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	storeURL := "file://" + filepath.Join(c.dir, "sessions")
	base := []string{"--store", storeURL, "--model", "script:" + script}
	var ids []string
	for i := range 3 {
		out := mustRun(t, c, append(base, "run", "--detach", fmt.Sprintf("task %d", i))...)
		ids = append(ids, strings.TrimSpace(out))
	}
	bad := ids[0] // the oldest: the one a worker takes first
	for _, name := range []string{"meta.json", "info.json"} {
		if err := os.WriteFile(filepath.Join(c.dir, "sessions", "default", bad, name), []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	out := mustRun(t, c, append(base, "--json", "sessions", "list")...)
	var listed []struct{ ID, Status string }
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatalf("sessions list --json: %v\n%s", err, out)
	}
	status := map[string]string{}
	for _, l := range listed {
		status[l.ID] = l.Status
	}
	for _, id := range ids {
		want := "queued" // run --detach, not started yet
		if id == bad {
			want = "damaged"
		}
		if status[id] != want {
			t.Errorf("sessions list shows %s as %q, want %s:\n%s", id, status[id], want, out)
		}
	}

	w := c.command(append(base, "worker", "--name", "w", "--poll", "100ms")...)
	var log strings.Builder
	w.Stdout, w.Stderr = &log, &log
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		_ = w.Wait()
	}()
	st, err := cairn.Open(t.Context(), storeURL, cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range ids[1:] {
		for {
			rec, err := st.Load(t.Context(), id, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Info.Status == cairn.StatusCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %s is %s while the worker runs beside a damaged session; the worker's log:\n%s", id, rec.Info.Status, log.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, err := st.Load(t.Context(), bad, 0); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("Load of the damaged session after the worker: %v, want it still damaged", err)
	}
}

// TestDamage_SQLiteCorruptPage breaks the b-tree page that holds one
// session's big event: reading that session is SQLITE_CORRUPT, reported
// as damage (not as an outage: the run exits 1, not 3); `cairn doctor`,
// which used to say "ok store", runs quick_check and names the file and
// the session.
func TestDamage_SQLiteCorruptPage(t *testing.T) {
	c := newCLIEnv(t)
	db := filepath.Join(c.dir, "c.db")
	store := "sqlite://" + db
	// Events of about 3 KB: one to a 4 KB page.
	mustRun(t, c, "--store", store, "run", "--session", "hit", "marker-hit "+strings.Repeat("x", 3000))
	for _, id := range []string{"a", "b"} {
		mustRun(t, c, "--store", store, "run", "--session", id, "short "+id)
	}
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"text":"marker-hit`))
	if i < 0 {
		t.Fatal("the event is not in the database file")
	}
	p := i / 4096 * 4096
	copy(b[p:], []byte{0x42, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) // no page has type 0x42
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := c.run("--store", store, "sessions", "show", "hit")
	if code != 1 || !strings.Contains(errOut, "damaged") || !strings.Contains(errOut, "SQLITE_CORRUPT") {
		t.Errorf("sessions show hit: exit %d\n%s%s\nwant exit 1 naming SQLITE_CORRUPT", code, out, errOut)
	}
	_, errOut, code = c.run("--store", store, "run", "--session", "hit", "more")
	if code != 1 || !strings.Contains(errOut, "SQLITE_CORRUPT") || strings.Contains(errOut, "did not answer") {
		t.Errorf("run on the damaged session: exit %d\n%s\nwant exit 1 naming SQLITE_CORRUPT, not an outage", code, errOut)
	}
	out, _, code = c.run("--store", store, "doctor")
	if code != 1 || !strings.Contains(out, "FAIL session  session hit is damaged") || !strings.Contains(out, "FAIL file") ||
		!strings.Contains(out, "the database file is damaged") {
		t.Errorf("doctor: exit %d\n%s\nwant exit 1 naming session hit and the damaged file", code, out)
	}
}

// mustRun runs cairn and fails the test unless it exits 0.
func mustRun(t *testing.T, c *cliEnv, args ...string) string {
	t.Helper()
	out, errOut, code := c.run(args...)
	if code != 0 {
		t.Fatalf("cairn %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}
