//go:build linux || darwin

package file_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/storetest"
)

const ns = "tests"

// logPath returns the path of a session's event log in a store folder.
func logPath(dir, id string) string { return filepath.Join(dir, ns, id, "events.jsonl") }

// appendRaw writes bytes at the end of a session's log by hand, as a
// process that died mid-write would have left them.
func appendRaw(t *testing.T, dir, id string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(logPath(dir, id), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

func readLog(t *testing.T, dir, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(logPath(dir, id))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustLoad(t *testing.T, s cairn.Store, id string) *cairn.Record {
	t.Helper()
	rec, err := s.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatalf("Load(%s): %v", id, err)
	}
	return rec
}

func checkSeqs(t *testing.T, evs []cairn.Event, n int) {
	t.Helper()
	if len(evs) != n {
		t.Fatalf("got %d events, want %d", len(evs), n)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d, want %d", i, e.Seq, i+1)
		}
	}
}

// TestStore_TornLine cuts the last line of a log short by hand, as a crash
// mid-write leaves it, in a store that is open and in one opened after.
func TestStore_TornLine(t *testing.T) {
	for _, reopen := range []bool{false, true} {
		name := "open store"
		if reopen {
			name = "reopened store"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
			const id = "torn"
			if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
				t.Fatal(err)
			}
			evs := storetest.Conversation(0, "r1", "before the crash")
			if err := s.Append(t.Context(), id, 0, evs[:10]...); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(t.Context(), id, 10, evs[10:]...); err != nil {
				t.Fatal(err)
			}
			good := readLog(t, dir, id)
			appendRaw(t, dir, id, []byte(`{"v":1,"seq":17,"at":"2026-01-02T03:04:05Z","kind":"cus`))
			if reopen {
				s.Close()
				s = openIn(t, dir, cairn.StoreOptions{Namespace: ns})
			}

			rec := mustLoad(t, s, id)
			checkSeqs(t, rec.Events, 16)
			if rec.Info.LastSeq != 16 {
				t.Errorf("last seq with a torn line = %d, want 16", rec.Info.LastSeq)
			}
			next := storetest.Custom(17, "after")
			if err := s.Append(t.Context(), id, 16, next); err != nil {
				t.Fatalf("Append after a torn line: %v", err)
			}
			rec = mustLoad(t, s, id)
			checkSeqs(t, rec.Events, 17)
			if rec.Info.LastSeq != 17 || rec.Info.Status != cairn.StatusCompleted || rec.Info.Steps != 4 {
				t.Errorf("info = last seq %d status %s steps %d, want 17 completed 4", rec.Info.LastSeq, rec.Info.Status, rec.Info.Steps)
			}
			if got := readLog(t, dir, id); !bytes.HasPrefix(got, good) || bytes.Count(got, []byte("\n")) != 17 {
				t.Errorf("log after recovery:\n%s\nwant the 16 lines written before the crash and one more", got)
			}
		})
	}
}

// TestStore_TornAppend leaves the first line of a two-event append whole
// and the second torn: the append never completed, so neither is kept.
func TestStore_TornAppend(t *testing.T) {
	dir := t.TempDir()
	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	const id = "torn-append"
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), id, 0, storetest.Custom(1, "one")); err != nil {
		t.Fatal(err)
	}
	// Write a whole two-event append through a second folder, then
	// graft all of it but its last bytes onto the log.
	other := t.TempDir()
	s2 := openIn(t, other, cairn.StoreOptions{Namespace: ns})
	if err := s2.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Append(t.Context(), id, 0, storetest.Custom(1, "one")); err != nil {
		t.Fatal(err)
	}
	before := len(readLog(t, other, id))
	if err := s2.Append(t.Context(), id, 1, storetest.Custom(2, "two"), storetest.Custom(3, "three")); err != nil {
		t.Fatal(err)
	}
	batch := readLog(t, other, id)[before:]
	if bytes.Count(batch, []byte("\n")) != 2 {
		t.Fatalf("a two-event append wrote %q, want two lines", batch)
	}
	appendRaw(t, dir, id, batch[:len(batch)-5])

	s.Close()
	s = openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	checkSeqs(t, mustLoad(t, s, id).Events, 1)
	if err := s.Append(t.Context(), id, 1, storetest.Custom(2, "retry")); err != nil {
		t.Fatalf("Append after a torn two-event append: %v", err)
	}
	checkSeqs(t, mustLoad(t, s, id).Events, 2)
}

// TestStore_UnrecordedAppend writes whole lines to the log that no info
// file covers, as when a process dies between its fsync and its info
// write: another store finds them, counts them in the info and lists them.
func TestStore_UnrecordedAppend(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	s2 := openIn(t, other, cairn.StoreOptions{Namespace: ns})
	const id = "unrecorded"
	for _, st := range []cairn.Store{s, s2} {
		if err := st.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	evs := storetest.UserTurn(0, "r1", "question")
	if err := s2.Append(t.Context(), id, 0, evs...); err != nil {
		t.Fatal(err)
	}
	appendRaw(t, dir, id, readLog(t, other, id))

	fresh := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	page, err := fresh.List(t.Context(), cairn.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 1 {
		t.Fatalf("List = %d sessions, want 1", len(page.Sessions))
	}
	if info := page.Sessions[0]; info.LastSeq != 4 || info.Steps != 1 || info.Status != cairn.StatusCompleted || info.FirstMessage != "question" {
		t.Errorf("listed info = %+v, want last seq 4, 1 step, completed, first message %q", info, "question")
	}
	if err := s.Append(t.Context(), id, 0, storetest.Custom(1, "stale")); !errors.Is(err, cairn.ErrConflict) {
		t.Errorf("Append at seq 0 over the unrecorded append: got %v, want ErrConflict", err)
	}
	if err := s.Append(t.Context(), id, 4, storetest.Custom(5, "next")); err != nil {
		t.Fatalf("Append after the unrecorded append: %v", err)
	}
	checkSeqs(t, mustLoad(t, fresh, id).Events, 5)
}

// TestStore_CorruptLog damages a line in the middle of a log: loading
// says the session is damaged, naming the line's seq; nothing cuts off what
// follows the damage, and nothing more is appended to it.
func TestStore_CorruptLog(t *testing.T) {
	dir := t.TempDir()
	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	const id = "corrupt"
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 3; i++ {
		if err := s.Append(t.Context(), id, i, storetest.Custom(i+1, "x")); err != nil {
			t.Fatal(err)
		}
	}
	log := readLog(t, dir, id)
	damaged := bytes.Replace(log, []byte(`"seq":2,`), []byte(`"seq":2!`), 1)
	if err := os.WriteFile(logPath(dir, id), damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	_, err := s.Load(t.Context(), id, 0)
	if d, ok := errors.AsType[*driver.DamagedError](err); !ok || d.Session != id || !strings.Contains(d.Where, "seq 2") {
		t.Fatalf("Load of a log damaged in the middle: got %v, want a *driver.DamagedError at seq 2", err)
	}
	if err := s.Append(t.Context(), id, 3, storetest.Custom(4, "x")); !errors.Is(err, cairn.ErrDamaged) {
		t.Errorf("Append to the damaged session: got %v, want ErrDamaged", err)
	}
	if got := readLog(t, dir, id); !bytes.Equal(got, damaged) {
		t.Errorf("the damaged log changed:\n%s", got)
	}
}
