package sqlite_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

// damagedFile makes a file with sessions "hit" and "kept", each a
// conversation of 16 events and a last event (seq 17) holding the text
// "the payload of ID", closes it and returns its path and contents. The
// text is in the file twice: as a JSON string in the event's envelope, and
// without its quotes in the event's text for search.
func damagedFile(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s := openStore(t, path, cairn.StoreOptions{})
	for _, id := range []string{"hit", "kept"} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		evs := append(storetest.Conversation(0, "r1", "hello"), storetest.Custom(17, "the payload of "+id))
		if err := s.Append(t.Context(), id, 0, evs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// at returns where s is in data, failing unless it is there once.
func at(t *testing.T, data []byte, s string) int {
	t.Helper()
	i := bytes.Index(data, []byte(s))
	if i < 0 || bytes.Contains(data[i+1:], []byte(s)) {
		t.Fatalf("%q is in the file %d times, want once", s, bytes.Count(data, []byte(s)))
	}
	return i
}

// TestStore_FlippedByte changes one letter inside a string of one stored
// event: Load of that session says it is damaged, naming the session and
// the seq; List shows it as damaged from then on; Append to it is refused;
// the other session goes on; Check names it.
func TestStore_FlippedByte(t *testing.T) {
	path, data := damagedFile(t)
	i := at(t, data, `"the payload of hit"`) // the envelope's
	data[i+5] = 'P'                          // "the Payload of hit"
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	s := openStore(t, path, cairn.StoreOptions{})
	_, err := s.Load(t.Context(), "hit", 0)
	d, ok := errors.AsType[*driver.DamagedError](err)
	if !ok || !errors.Is(err, cairn.ErrDamaged) || d.Session != "hit" {
		t.Fatalf("Load of the changed session: got %v, want a *driver.DamagedError for hit", err)
	}
	if !strings.Contains(err.Error(), "seq 17") || !strings.Contains(err.Error(), "checksum") || cairn.IsUnavailable(err) {
		t.Errorf("Load: %q, want the seq (17) and the checksum named, and not an outage", err)
	}
	if err := s.Append(t.Context(), "hit", 17, storetest.Custom(18, "x")); !errors.Is(err, cairn.ErrDamaged) {
		t.Errorf("Append to the damaged session: got %v, want ErrDamaged", err)
	}
	if rec, err := s.Load(t.Context(), "kept", 0); err != nil || len(rec.Events) != 17 {
		t.Fatalf("Load of the other session: %v", err)
	}
	if err := s.Append(t.Context(), "kept", 17, storetest.Custom(18, "x")); err != nil {
		t.Errorf("Append to the other session: %v", err)
	}
	assertListed(t, s, nil, map[string]cairn.Status{"hit": cairn.StatusDamaged, "kept": cairn.StatusCompleted})
	assertListed(t, s, []cairn.Status{cairn.StatusCompleted}, map[string]cairn.Status{"kept": cairn.StatusCompleted})
	assertListed(t, s, []cairn.Status{cairn.StatusDamaged}, map[string]cairn.Status{"hit": cairn.StatusDamaged})

	// A new store (another process) finds it too, with Check.
	rep := check(t, openStore(t, path, cairn.StoreOptions{}))
	if rep.Sessions != 2 || len(rep.Problems) != 1 || rep.Problems[0].Session != "hit" || !rep.Problems[0].Damage {
		t.Fatalf("Check = %+v, want 2 sessions and one problem, session hit", rep)
	}
	if !strings.Contains(rep.Problems[0].Where, "seq 17") {
		t.Errorf("Check's problem is at %q, want seq 4 named", rep.Problems[0].Where)
	}
}

// TestStore_CorruptPage breaks the b-tree page that holds one session's
// events: reading it is SQLITE_CORRUPT, reported as damage and not as an
// outage; from then on the store writes nothing more to the file; Check
// runs quick_check and names the file and the session.
func TestStore_CorruptPage(t *testing.T) {
	path, data := damagedFile(t)
	const page = 4096
	p := at(t, data, `"the payload of hit"`) / page * page
	if p == 0 {
		t.Fatal("the session's events are on the first page")
	}
	// The page's header: a type byte no b-tree page has, then garbage.
	copy(data[p:], []byte{0x42, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	s := openStore(t, path, cairn.StoreOptions{})
	_, err := s.Load(t.Context(), "hit", 0)
	if !errors.Is(err, cairn.ErrDamaged) || cairn.IsUnavailable(err) || !strings.Contains(err.Error(), "SQLITE_CORRUPT") {
		t.Fatalf("Load of the session on the broken page: got %v, want ErrDamaged naming SQLITE_CORRUPT, not an outage", err)
	}
	if d, ok := errors.AsType[*driver.DamagedError](err); !ok || d.Session != "hit" {
		t.Errorf("Load: %v, want a *driver.DamagedError for hit", err)
	}
	err = s.Create(t.Context(), cairn.SessionMeta{ID: "new"})
	if !errors.Is(err, cairn.ErrDamaged) || !strings.Contains(err.Error(), "writes nothing more") {
		t.Errorf("Create after the damage was seen: got %v, want ErrDamaged saying nothing more is written", err)
	}
	if err := s.Append(t.Context(), "kept", 17, storetest.Custom(18, "x")); !errors.Is(err, cairn.ErrDamaged) {
		t.Errorf("Append after the damage was seen: got %v, want ErrDamaged", err)
	}
	before, _ := os.ReadFile(path)

	s2 := openStore(t, path, cairn.StoreOptions{})
	rep := check(t, s2)
	var file, hit bool
	for _, p := range rep.Problems {
		file = file || p.Session == "" && p.Where == path && strings.Contains(p.Msg, "damaged") && p.Fix != ""
		hit = hit || p.Session == "hit"
	}
	if !file || !hit {
		t.Errorf("Check = %+v, want a problem of the file and one of session hit", rep.Problems)
	}
	if err := s2.Append(t.Context(), "kept", 17, storetest.Custom(18, "x")); !errors.Is(err, cairn.ErrDamaged) {
		t.Errorf("Append after Check found the damage: got %v, want ErrDamaged", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the damaged file changed")
	}
}

func check(t *testing.T, s *sqlite.Store) *driver.CheckReport {
	t.Helper()
	rep, err := s.Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// assertListed checks that List with the statuses lists exactly want.
func assertListed(t *testing.T, s cairn.Store, statuses []cairn.Status, want map[string]cairn.Status) {
	t.Helper()
	page, err := s.List(t.Context(), cairn.ListOptions{Status: statuses})
	if err != nil {
		t.Fatalf("List %v: %v", statuses, err)
	}
	got := map[string]cairn.Status{}
	for _, info := range page.Sessions {
		got[info.ID] = info.Status
	}
	if len(got) != len(want) {
		t.Errorf("List %v = %v, want %v", statuses, got, want)
	}
	for id, st := range want {
		if got[id] != st {
			t.Errorf("List %v = %v, want %v", statuses, got, want)
			return
		}
	}
}

// TestStore_CorruptSessionsPage breaks the page of the sessions table: List
// fails with the damage, and Check still names each session (their IDs
// read from the List index and the events table) and the file.
func TestStore_CorruptSessionsPage(t *testing.T) {
	path, data := damagedFile(t)
	// The sessions' first message "hello", in their rows: not in an
	// event's JSON, where a quote comes before it.
	p := -1
	for i := bytes.Index(data, []byte("hello")); i > 0; {
		if data[i-1] != '"' {
			p = i / 4096 * 4096
			break
		}
		j := bytes.Index(data[i+1:], []byte("hello"))
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if p <= 0 {
		t.Fatal("no first message outside the events")
	}
	copy(data[p:], []byte{0x42, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, path, cairn.StoreOptions{})
	if _, err := s.List(t.Context(), cairn.ListOptions{}); !errors.Is(err, cairn.ErrDamaged) || cairn.IsUnavailable(err) {
		t.Errorf("List over a broken sessions page: got %v, want ErrDamaged", err)
	}
	rep := check(t, s)
	var named []string
	file := false
	for _, p := range rep.Problems {
		if p.Session != "" {
			named = append(named, p.Session)
		}
		file = file || p.Session == "" && p.Damage
	}
	if strings.Join(named, ",") != "hit,kept" || !file {
		t.Errorf("Check = %+v, want hit and kept named, and the file", rep.Problems)
	}
}
