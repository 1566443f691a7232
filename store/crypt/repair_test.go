package crypt_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/storetest"
)

// damage writes a sealed session "a" of 13 events, then appends a turn of four
// events in clear underneath, as a process without the key once could, and
// returns the plain text of those.
func damage(t *testing.T, s crypt.Store) string {
	t.Helper()
	write(t, s, "a", crypttest.Marker())
	clear := "clear-" + crypttest.Marker()
	if err := s.Inner().Append(t.Context(), "a", 13, storetest.UserTurn(13, "r2", clear)...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(t.Context(), "a", 0); !errors.Is(err, crypt.ErrPlaintext) {
		t.Fatalf("Load of the damaged session: got %v, want ErrPlaintext", err)
	}
	return clear
}

func TestStore_Repair(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t, crypttest.NewKeyring(t))
			clear := damage(t, s)
			ins, err := s.Inspect(t.Context(), "a")
			if err != nil || !ins.Damaged() || ins.Events != 17 || ins.Sealed != 12 || len(ins.Clear) != 4 || ins.Clear[0] != 14 {
				t.Fatalf("Inspect = %+v, %v; want 17 events, 12 sealed, seqs 14 to 17 in clear", ins, err)
			}
			if c, ok := s.(driver.Checker); ok {
				rep, err := c.Check(t.Context())
				if err != nil || len(rep.Damaged()) != 1 || !strings.Contains(rep.Damaged()[0].Fix, "cairn sessions repair a") {
					t.Errorf("Check = %+v, %v; want session a damaged, fixed by repair", rep, err)
				}
			}

			res, err := s.Repair(t.Context(), "a", crypt.RepairOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *res != (crypt.RepairResult{Session: "a", Resealed: 4, Events: 17}) {
				t.Errorf("Repair = %+v, want 4 resealed of 17 events, no backup left", res)
			}
			rec, err := s.Load(t.Context(), "a", 0)
			if err != nil || len(rec.Events) != 17 || !strings.Contains(string(rec.Events[14].Data), clear) {
				t.Fatalf("Load after the repair: %v (%d events)", err, len(rec.Events))
			}
			raw, _ := s.Inner().Load(t.Context(), "a", 0)
			for _, e := range raw.Events {
				if strings.Contains(string(e.Data), clear) {
					t.Errorf("after the repair seq %d is still in clear", e.Seq)
				}
			}
			if _, err := s.Load(t.Context(), "a-before-repair", 0); !errors.Is(err, cairn.ErrNotFound) {
				t.Errorf("the backup after a full repair: %v, want it deleted", err)
			}
			if _, err := s.Repair(t.Context(), "a", crypt.RepairOptions{}); err == nil || !strings.Contains(err.Error(), "nothing to repair") {
				t.Errorf("Repair of a sound session: %v", err)
			}
		})
	}
}

func TestStore_RepairCut(t *testing.T) {
	s := backends(t)["sqlite"](t, crypttest.NewKeyring(t))
	clear := damage(t, s)
	res, err := s.Repair(t.Context(), "a", crypt.RepairOptions{Cut: true, Backup: "a-whole"})
	if err != nil {
		t.Fatal(err)
	}
	if *res != (crypt.RepairResult{Session: "a", Cut: 4, Events: 13, Backup: "a-whole"}) {
		t.Errorf("Repair --cut = %+v", res)
	}
	rec, err := s.Load(t.Context(), "a", 0)
	if err != nil || len(rec.Events) != 13 || rec.Info.Status != cairn.StatusCompleted {
		t.Fatalf("Load after the cut: %v (%d events)", err, len(rec.Events))
	}
	whole, err := s.Load(t.Context(), "a-whole", 0)
	if err != nil || len(whole.Events) != 17 || !strings.Contains(string(whole.Events[14].Data), clear) || whole.Info.Labels["repair_of"] != "a" {
		t.Fatalf("the backup: %v (%d events, labels %v)", err, len(whole.Events), whole.Info.Labels)
	}
	// A session whose first event is in clear cannot be cut.
	if err := s.Inner().Create(t.Context(), cairn.SessionMeta{ID: "old"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Inner().Append(t.Context(), "old", 0, storetest.UserTurn(0, "r1", "hi")...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Repair(t.Context(), "old", crypt.RepairOptions{Cut: true}); err == nil || !strings.Contains(err.Error(), "leave nothing") {
		t.Errorf("cut of a session in clear from its start: %v", err)
	}
	if _, err := s.Repair(t.Context(), "old", crypt.RepairOptions{}); err != nil {
		t.Errorf("seal of a session in clear from its start: %v", err)
	}
}
