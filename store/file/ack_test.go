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

// TestStore_TwoFaults acknowledges 10 events of session "hit", one append
// each, then cuts the last two lines off its log and spoils a second
// record of what was acknowledged: info.json damaged, deleted, or put
// back as it was at seq 8 (so that it matches the cut log), or ack.json
// deleted. Each alone would leave the cut found by the other record; with
// info.json alone, as before, the log read as a history of 8 events, List
// and Check saw nothing, and the next append wrote seqs 9 and 10 again.
// A store opened afterwards finds the damage on its first call, whichever
// it is (List, Load, Append or Check), names the session and the record
// that disagrees, refuses every append, and writes nothing to the log.
func TestStore_TwoFaults(t *testing.T) {
	spoils := map[string]struct {
		spoil func(t *testing.T, dir string, info8 []byte)
		want  string // in the error
	}{
		"info.json damaged": {func(t *testing.T, dir string, _ []byte) {
			writeIn(t, dir, "hit", "info.json", []byte(`{"crc32c":12,"info":{"format":"garbage"}}`))
		}, "ack.json (events to seq 10) says were acknowledged"},
		"info.json deleted": {func(t *testing.T, dir string, _ []byte) {
			removeIn(t, dir, "hit", "info.json")
		}, "ack.json (events to seq 10) says were acknowledged"},
		"info.json as at seq 8": {func(t *testing.T, dir string, info8 []byte) {
			writeIn(t, dir, "hit", "info.json", info8)
		}, "ack.json (events to seq 10) says were acknowledged"},
		"ack.json deleted": {func(t *testing.T, dir string, _ []byte) {
			removeIn(t, dir, "hit", "ack.json")
		}, "info.json says were acknowledged"},
	}
	calls := []string{"List", "Load", "Append", "Check"}
	for name, c := range spoils {
		for _, first := range calls {
			t.Run(name+"/"+first+" first", func(t *testing.T) {
				dir, info8 := tenAcknowledged(t)
				cutLines(t, dir, "hit", 2)
				c.spoil(t, dir, info8)
				log := readLog(t, dir, "hit")
				s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
				for _, call := range append([]string{first}, calls...) {
					checkTwoFaults(t, s, call, c.want)
				}
				if got := readLog(t, dir, "hit"); !bytes.Equal(got, log) {
					t.Errorf("the damaged log was written to:\n%s\nwas\n%s", got, log)
				}
			})
		}
	}
}

// tenAcknowledged makes sessions "hit" and "kept" in a new store folder,
// each of 10 events appended one at a time, and closes the store. It
// returns the folder and hit's info.json as it was after its 8th event.
func tenAcknowledged(t *testing.T) (dir string, info8 []byte) {
	t.Helper()
	dir = t.TempDir()
	s := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	for _, id := range []string{"hit", "kept"} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		for seq := int64(1); seq <= 10; seq++ {
			if err := s.Append(t.Context(), id, seq-1, storetest.Custom(seq, "event of "+id)); err != nil {
				t.Fatal(err)
			}
			if id == "hit" && seq == 8 {
				info8 = readIn(t, dir, id, "info.json")
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, info8
}

// checkTwoFaults makes one call of s and checks that it finds session
// "hit" damaged, with an error holding want, and "kept" sound.
func checkTwoFaults(t *testing.T, s *file.Store, call, want string) {
	t.Helper()
	isHit := func(err error) bool {
		d, ok := errors.AsType[*driver.DamagedError](err)
		return ok && d.Session == "hit" && strings.Contains(err.Error(), want)
	}
	switch call {
	case "List":
		page, err := s.List(t.Context(), cairn.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]cairn.Status{}
		for _, info := range page.Sessions {
			got[info.ID] = info.Status
		}
		if len(got) != 2 || got["hit"] != cairn.StatusDamaged || got["kept"] == cairn.StatusDamaged {
			t.Errorf("List = %v, want hit damaged and kept not", got)
		}
		page, err = s.List(t.Context(), cairn.ListOptions{Status: []cairn.Status{cairn.StatusDamaged}})
		if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != "hit" {
			t.Errorf("List of the damaged = %+v, %v; want hit alone", page, err)
		}
	case "Load":
		if rec, err := s.Load(t.Context(), "hit", 0); !isHit(err) {
			t.Errorf("Load(hit) = %v; want a *driver.DamagedError for hit saying %q", err, want)
			if err == nil {
				t.Errorf("Load(hit) read %d events, to seq %d", len(rec.Events), rec.Info.LastSeq)
			}
		}
		if rec := mustLoad(t, s, "kept"); len(rec.Events) != 10 {
			t.Errorf("kept has %d events, want 10", len(rec.Events))
		}
	case "Append":
		// At the seq the cut log ends at, at the seq acknowledged, and
		// past it: each refused.
		for _, expect := range []int64{8, 10, 11} {
			if err := s.Append(t.Context(), "hit", expect, storetest.Custom(expect+1, "over the lost")); !errors.Is(err, cairn.ErrDamaged) {
				t.Errorf("Append(hit) at seq %d = %v, want ErrDamaged", expect, err)
			}
		}
	case "Check":
		rep, err := s.Check(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		d := rep.Damaged()
		if rep.Sessions != 2 || len(d) != 1 || d[0].Session != "hit" || !strings.Contains(d[0].Msg, want) {
			t.Errorf("Check = %+v, want 2 sessions and hit damaged, saying %q", rep, want)
		}
	}
}

// cutLines removes the last n lines of a session's log.
func cutLines(t *testing.T, dir, id string, n int) {
	t.Helper()
	log := readLog(t, dir, id)
	end := len(log)
	for range n {
		end = bytes.LastIndexByte(log[:end-1], '\n') + 1
	}
	if err := os.Truncate(logPath(dir, id), int64(end)); err != nil {
		t.Fatal(err)
	}
}

func readIn(t *testing.T, dir, id, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ns, id, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeIn(t *testing.T, dir, id, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ns, id, name), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func removeIn(t *testing.T, dir, id, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, ns, id, name)); err != nil {
		t.Fatal(err)
	}
}
