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
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/storetest"
)

// twoSessions makes sessions "hit" and "kept" in a new store folder, each
// a conversation of 16 events in two appends and a 17th event holding
// "the payload of ID", and closes the store.
func twoSessions(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	for _, id := range []string{"hit", "kept"} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		evs := append(storetest.Conversation(0, "r1", "hello "+id), storetest.Custom(17, "the payload of "+id))
		if err := s.Append(t.Context(), id, 0, evs[:10]...); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(t.Context(), id, 10, evs[10:]...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// assertDamaged checks that s refuses session "hit" as damaged (Load,
// Append at its last seq and at a stale one, a lease), with an error whose
// text holds want, lists it as damaged beside "kept", goes on with
// "kept", reports it in Check, and never changed its log.
func assertDamaged(t *testing.T, s *file.Store, dir string, want string) {
	t.Helper()
	log := readLog(t, dir, "hit")
	_, err := s.Load(t.Context(), "hit", 0)
	d, ok := errors.AsType[*driver.DamagedError](err)
	if !ok || d.Session != "hit" || !strings.Contains(err.Error(), want) || cairn.IsUnavailable(err) {
		t.Fatalf("Load(hit) = %v, want a *driver.DamagedError for hit saying %q", err, want)
	}
	for _, expect := range []int64{17, 16, 12} {
		if err := s.Append(t.Context(), "hit", expect, storetest.Custom(expect+1, "more")); !errors.Is(err, cairn.ErrDamaged) {
			t.Errorf("Append(hit) at seq %d = %v, want ErrDamaged", expect, err)
		}
	}
	if _, err := s.Acquire(t.Context(), "hit", "w", 10e9); !errors.Is(err, cairn.ErrDamaged) {
		t.Errorf("Acquire(hit) = %v, want ErrDamaged", err)
	}
	for _, filter := range [][]cairn.Status{nil, {cairn.StatusRunning, cairn.StatusCompleted}, {cairn.StatusDamaged}} {
		page, err := s.List(t.Context(), cairn.ListOptions{Status: filter})
		if err != nil {
			t.Fatalf("List %v: %v", filter, err)
		}
		got := map[string]cairn.Status{}
		for _, info := range page.Sessions {
			got[info.ID] = info.Status
		}
		want := map[string]cairn.Status{"hit": cairn.StatusDamaged, "kept": cairn.StatusCompleted}
		switch {
		case filter == nil:
		case filter[0] == cairn.StatusDamaged:
			delete(want, "kept")
		default:
			delete(want, "hit")
		}
		if len(got) != len(want) || got["hit"] != want["hit"] || got["kept"] != want["kept"] {
			t.Errorf("List %v = %v, want %v", filter, got, want)
		}
	}
	if rec := mustLoad(t, s, "kept"); len(rec.Events) != 17 {
		t.Errorf("kept has %d events, want 17", len(rec.Events))
	}
	if err := s.Append(t.Context(), "kept", 17, storetest.Custom(18, "more")); err != nil {
		t.Errorf("Append(kept): %v", err)
	}
	rep, err := s.Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sessions != 2 || len(rep.Damaged()) != 1 || rep.Damaged()[0].Session != "hit" || rep.Damaged()[0].Fix == "" {
		t.Errorf("Check = %+v, want 2 sessions and hit damaged, with a fix", rep)
	}
	if got := readLog(t, dir, "hit"); !bytes.Equal(got, log) {
		t.Errorf("the damaged log changed:\n%s\nwas\n%s", got, log)
	}
}

// TestStore_CutLog cuts 30 bytes off a log, through the last event into
// the one before: the log is shorter than what the store acknowledged
// (info.json says so), and the session is damaged, in a store opened
// after and in one that was open. Nothing cuts the intact events, and
// nothing is written over them.
func TestStore_CutLog(t *testing.T) {
	for _, open := range []bool{false, true} {
		t.Run(map[bool]string{false: "reopened", true: "open"}[open], func(t *testing.T) {
			dir := twoSessions(t)
			var s *file.Store
			if open {
				s = openIn(t, dir, cairn.StoreOptions{Namespace: ns})
				mustLoad(t, s, "hit")
			}
			fi, err := os.Stat(logPath(dir, "hit"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(logPath(dir, "hit"), fi.Size()-30); err != nil {
				t.Fatal(err)
			}
			if !open {
				s = openIn(t, dir, cairn.StoreOptions{Namespace: ns})
			}
			assertDamaged(t, s, dir, "shorter than")
			if err := s.Delete(t.Context(), "hit"); err != nil {
				t.Fatalf("Delete(hit): %v", err)
			}
			if _, err := s.Load(t.Context(), "hit", 0); !errors.Is(err, cairn.ErrNotFound) {
				t.Errorf("Load(hit) after Delete = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestStore_FlippedByte changes one letter inside a string of the last
// event: the line fails its checksum, and the session is damaged at that
// seq, from the first Load that reads it.
func TestStore_FlippedByte(t *testing.T) {
	dir := twoSessions(t)
	log := readLog(t, dir, "hit")
	i := bytes.Index(log, []byte("the payload of hit"))
	log[i+4] = 'P'
	if err := os.WriteFile(logPath(dir, "hit"), log, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	assertDamaged(t, s, dir, "seq 17")
	if _, err := s.Load(t.Context(), "hit", 0); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("Load(hit) = %v, want the checksum named", err)
	}
	// Another store finds it with Check alone.
	rep, err := openIn(t, dir, cairn.StoreOptions{Namespace: ns}).Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d := rep.Damaged(); len(d) != 1 || d[0].Session != "hit" || !strings.Contains(d[0].Where, "seq 17") {
		t.Errorf("Check = %+v, want hit damaged at seq 17", rep)
	}
}

// TestStore_UnreadableMeta writes garbage over one session's meta.json,
// with its info.json intact and then with it unreadable too: List goes on
// and shows the session as damaged, every call on it says so, Delete
// removes it.
func TestStore_UnreadableMeta(t *testing.T) {
	for _, alsoInfo := range []bool{false, true} {
		t.Run(map[bool]string{false: "meta.json", true: "meta.json and info.json"}[alsoInfo], func(t *testing.T) {
			dir := twoSessions(t)
			if err := os.WriteFile(filepath.Join(dir, ns, "hit", "meta.json"), []byte("garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
			if alsoInfo {
				if err := os.WriteFile(filepath.Join(dir, ns, "hit", "info.json"), []byte("garbage"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
			// List first, in a store that has not read the session.
			page, err := s.List(t.Context(), cairn.ListOptions{})
			if err != nil || len(page.Sessions) != 2 {
				t.Fatalf("List = %v, %v; want both sessions", page, err)
			}
			assertDamaged(t, s, dir, "meta.json")
			if err := s.Delete(t.Context(), "hit"); err != nil {
				t.Fatalf("Delete(hit): %v", err)
			}
		})
	}
}

// TestStore_MissingLockFile removes a session's lock file: the folder is
// there, the session is damaged (not missing), and Delete removes it.
func TestStore_MissingLockFile(t *testing.T) {
	dir := twoSessions(t)
	if err := os.Remove(filepath.Join(dir, ns, "hit", "lock")); err != nil {
		t.Fatal(err)
	}
	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	if _, err := s.Load(t.Context(), "hit", 0); !errors.Is(err, cairn.ErrDamaged) || !strings.Contains(err.Error(), "lock") {
		t.Errorf("Load(hit) = %v, want ErrDamaged naming the lock file", err)
	}
	if err := s.Append(t.Context(), "hit", 17, storetest.Custom(18, "x")); !errors.Is(err, cairn.ErrDamaged) {
		t.Errorf("Append(hit) = %v, want ErrDamaged", err)
	}
	if err := s.Delete(t.Context(), "hit"); err != nil {
		t.Fatalf("Delete(hit): %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ns, "hit")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the folder of hit is still there: %v", err)
	}
}

// TestStore_LogWithoutChecksums reads a log written before lines had
// checksums, appends to it, and reads it again; a line without a checksum
// after one with it is damage.
func TestStore_LogWithoutChecksums(t *testing.T) {
	dir := twoSessions(t)
	var old []byte
	for _, line := range bytes.SplitAfter(readLog(t, dir, "hit"), []byte("\n")) {
		if i := bytes.Index(line, []byte(`","v":`)); i > 0 {
			line = append([]byte("{"), line[i+2:]...)
		}
		old = append(old, line...)
	}
	if bytes.Contains(old, []byte("crc32c")) || !bytes.HasPrefix(old, []byte(`{"v":1,"seq":1,`)) {
		t.Fatalf("the log without checksums:\n%s", old)
	}
	if err := os.WriteFile(logPath(dir, "hit"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"info.json", "ack.json"} { // their log size was the log's with checksums
		if err := os.Remove(filepath.Join(dir, ns, "hit", name)); err != nil {
			t.Fatal(err)
		}
	}
	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	checkSeqs(t, mustLoad(t, s, "hit").Events, 17)
	if err := s.Append(t.Context(), "hit", 17, storetest.Custom(18, "after")); err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, mustLoad(t, s, "hit").Events, 18)
	s.Close()

	// An old line after the new one: damage.
	lines := bytes.SplitAfter(old, []byte("\n"))
	appendRaw(t, dir, "hit", bytes.Replace(lines[16], []byte(`"seq":17,`), []byte(`"seq":19,`), 1))
	s = openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	if _, err := s.Load(t.Context(), "hit", 0); !errors.Is(err, cairn.ErrDamaged) || !strings.Contains(err.Error(), "seq 19") {
		t.Errorf("Load with an old line after a new one = %v, want ErrDamaged at seq 19", err)
	}
}

// TestStore_LoadTail: a load from a seq in the later half of the history
// reads the log's end alone, so damage before it is not its concern (a
// whole Load, or Check, finds it); damage in the end it reads, or lines
// that do not have the seqs they should, make the session damaged, named
// as a whole Load names it.
func TestStore_LoadTail(t *testing.T) {
	lineOf := func(log []byte, seq int) (start, end int) {
		for i := 1; i < seq; i++ {
			start += bytes.IndexByte(log[start:], '\n') + 1
		}
		return start, start + bytes.IndexByte(log[start:], '\n')
	}
	t.Run("damage before the end", func(t *testing.T) {
		dir := twoSessions(t)
		log := readLog(t, dir, "hit")
		start, _ := lineOf(log, 2)
		log[start+40] ^= 1
		if err := os.WriteFile(logPath(dir, "hit"), log, 0o600); err != nil {
			t.Fatal(err)
		}
		s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
		rec, err := s.Load(t.Context(), "hit", 15)
		if err != nil {
			t.Fatalf("Load(hit) from seq 15, damage at seq 2: %v", err)
		}
		if len(rec.Events) != 3 || rec.Events[0].Seq != 15 || rec.Events[2].Seq != 17 {
			t.Fatalf("Load(hit) from seq 15: %d events from seq %d, want 15 to 17", len(rec.Events), rec.Events[0].Seq)
		}
		assertDamaged(t, s, dir, "seq 2")
		if _, err := s.Load(t.Context(), "hit", 15); !errors.Is(err, cairn.ErrDamaged) {
			t.Errorf("Load(hit) from seq 15 once the damage is known: %v, want ErrDamaged", err)
		}
	})
	for name, c := range map[string]struct {
		spoil func(log []byte)
		want  string
	}{
		"a flipped byte": {func(log []byte) {
			start, _ := lineOf(log, 16)
			log[start+50] ^= 1
		}, "seq 16"},
		"a line split in two": {func(log []byte) {
			start, end := lineOf(log, 16)
			log[(start+end)/2] = '\n' // as many bytes, one line more
		}, "seq 16"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := twoSessions(t)
			log := readLog(t, dir, "hit")
			c.spoil(log)
			if err := os.WriteFile(logPath(dir, "hit"), log, 0o600); err != nil {
				t.Fatal(err)
			}
			s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
			_, err := s.Load(t.Context(), "hit", 15)
			if d, ok := errors.AsType[*driver.DamagedError](err); !ok || d.Session != "hit" || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load(hit) from seq 15 = %v, want a *driver.DamagedError at %s", err, c.want)
			}
			assertDamaged(t, s, dir, c.want)
		})
	}
}
