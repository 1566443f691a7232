package main

import (
	"bytes"
	"database/sql"
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
			c.must("--store", store, "run", "--session", "hit", "the quick brown fox")
			c.must("--store", store, "run", "--session", "kept", "another question")
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
			c.must("--store", store, "run", "--session", "kept", "one more")
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
	storeURL, base, ids := c.queueRuns(`{"steps":[{"text":"done"}]}`, 3)
	bad := ids[0] // the oldest: the one a worker takes first
	for _, name := range []string{"meta.json", "info.json"} {
		if err := os.WriteFile(filepath.Join(c.dir, "sessions", "default", bad, name), []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	status := statuses(c.list(base...))
	for _, id := range ids {
		want := "queued" // run --detach, not started yet
		if id == bad {
			want = "damaged"
		}
		if status[id] != want {
			t.Errorf("sessions list shows %s as %q, want %s: %v", id, status[id], want, status)
		}
	}

	w, log := c.start(append(base, "worker", "--name", "w", "--poll", "100ms")...)
	defer func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		_ = w.Wait()
	}()
	st, err := cairn.Open(t.Context(), storeURL, cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The worker runs the others beside the damaged session.
	waitCompleted(t, st, time.Now().Add(60*time.Second), log, ids[1:]...)
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
	c.must("--store", store, "run", "--session", "hit", "marker-hit "+strings.Repeat("x", 3000))
	for _, id := range []string{"a", "b"} {
		c.must("--store", store, "run", "--session", id, "short "+id)
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

// TestDamage_CutLogAndInfo cuts the last two lines off the log of a
// session whose two turns acknowledged 10 events, and damages or deletes
// its info.json: two faults at once. `sessions show` and `sessions list`
// say it is damaged (not "last seq 8"), `doctor` names it, and `sessions
// resume` refuses it instead of writing new events at seqs 9 to 12 over
// the lost ones; the log stays as it was.
func TestDamage_CutLogAndInfo(t *testing.T) {
	for name, spoil := range map[string]func(path string) error{
		"info.json damaged": func(path string) error { return os.WriteFile(path, []byte("garbage\n"), 0o600) },
		"info.json deleted": os.Remove,
	} {
		t.Run(name, func(t *testing.T) {
			c := newCLIEnv(t)
			store := "file://" + filepath.Join(c.dir, "store")
			folder := filepath.Join(c.dir, "store", "default", "hit")
			c.must("--store", store, "run", "--session", "hit", "hello one")
			c.must("--store", store, "run", "--session", "hit", "hello two")
			c.must("--store", store, "run", "--session", "kept", "another question")
			log, err := os.ReadFile(filepath.Join(folder, "events.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(log, []byte("\n"))
			if len(lines) != 11 || len(lines[10]) != 0 || !bytes.Contains(lines[9], []byte(`"seq":10,`)) {
				t.Fatalf("the log holds %d lines, want 10 events:\n%s", len(lines)-1, log)
			}
			cut := bytes.Join(lines[:8], nil)
			if err := os.WriteFile(filepath.Join(folder, "events.jsonl"), cut, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := spoil(filepath.Join(folder, "info.json")); err != nil {
				t.Fatal(err)
			}

			out, errOut, code := c.run("--store", store, "sessions", "show", "hit")
			if code != 1 || !strings.Contains(errOut, "session hit is damaged") || !strings.Contains(errOut, "ack.json (events to seq 10)") {
				t.Errorf("sessions show hit: exit %d\n%s%s\nwant exit 1 saying hit is damaged, ack.json having acknowledged seq 10", code, out, errOut)
			}
			status := statuses(c.list("--store", store))
			if len(status) != 2 || status["hit"] != "damaged" || status["kept"] != "completed" {
				t.Errorf("sessions list: %v, want hit damaged and kept completed", status)
			}
			out, _, code = c.run("--store", store, "doctor")
			if code != 1 || !strings.Contains(out, "FAIL session  session hit is damaged") || strings.Contains(out, "session kept") {
				t.Errorf("doctor: exit %d\n%s\nwant exit 1 naming hit and not kept", code, out)
			}
			out, errOut, code = c.run("--store", store, "sessions", "resume", "hit", "again")
			if code == 0 || !strings.Contains(errOut, "damaged") {
				t.Errorf("sessions resume hit: exit %d\n%s%s\nwant a failure naming the damage", code, out, errOut)
			}
			if got, err := os.ReadFile(filepath.Join(folder, "events.jsonl")); err != nil || !bytes.Equal(got, cut) {
				t.Errorf("the damaged log changed (%v):\n%s\nwas\n%s", err, got, cut)
			}
			c.must("--store", store, "run", "--session", "kept", "one more")
		})
	}
}

// TestDamage_SQLiteDeletedRow deletes one event row of a session from the
// SQLite file with another program, as the sqlite3 shell would: a new
// `sessions list` shows it damaged (it showed the status its row held,
// completed, until something loaded the session), `show` and `run` refuse
// it naming the seq, and `doctor` names it.
func TestDamage_SQLiteDeletedRow(t *testing.T) {
	c := newCLIEnv(t)
	db := filepath.Join(c.dir, "c.db")
	store := "sqlite://" + db
	c.must("--store", store, "run", "--session", "hit", "hello one")
	c.must("--store", store, "run", "--session", "kept", "another question")
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	res, err := raw.ExecContext(t.Context(), `DELETE FROM events WHERE session_id = 'hit' AND seq = 4`)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("deleted %d rows (%v), want 1", n, err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}

	status := statuses(c.list("--store", store))
	if len(status) != 2 || status["hit"] != "damaged" || status["kept"] != "completed" {
		t.Errorf("sessions list: %v, want hit damaged and kept completed", status)
	}
	out, errOut, code := c.run("--store", store, "sessions", "show", "hit")
	if code != 1 || !strings.Contains(errOut, "session hit is damaged") || !strings.Contains(errOut, "seq 4 was deleted") {
		t.Errorf("sessions show hit: exit %d\n%s%s\nwant exit 1 saying the event of seq 4 was deleted", code, out, errOut)
	}
	if _, errOut, code := c.run("--store", store, "run", "--session", "hit", "more"); code == 0 || !strings.Contains(errOut, "damaged") {
		t.Errorf("run on the damaged session: exit %d\n%s\nwant a failure naming the damage", code, errOut)
	}
	out, _, code = c.run("--store", store, "doctor")
	if code != 1 || !strings.Contains(out, "FAIL session  session hit is damaged") || strings.Contains(out, "session kept") {
		t.Errorf("doctor: exit %d\n%s\nwant exit 1 naming hit and not kept", code, out)
	}
	c.must("--store", store, "run", "--session", "kept", "one more")
}
