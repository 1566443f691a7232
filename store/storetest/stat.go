package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// testStat: Stat returns a session's info as Load does, for a new session
// and after appends; ErrNotFound for a session never created, deleted, or
// expired; ErrInvalidID for a bad ID.
func testStat(t *testing.T, h *harness) {
	const ttl = time.Hour
	s := h.storeWith(t, cairn.StoreOptions{TTL: ttl})
	id := newSession(t, s, map[string]string{"team": "a"})
	stat := func(want string) *cairn.SessionInfo {
		t.Helper()
		info, err := s.Stat(t.Context(), id)
		if err != nil {
			t.Fatalf("Stat %s: %v", want, err)
		}
		if rec := mustLoad(t, s, id); !reflect.DeepEqual(*info, rec.Info) {
			t.Errorf("Stat %s = %+v, Load's info %+v", want, *info, rec.Info)
		}
		return info
	}
	if info := stat("of a new session"); info.LastSeq != 0 || info.Status != cairn.StatusNew || info.Labels["team"] != "a" {
		t.Errorf("Stat of a new session = %+v", *info)
	}
	mustAppend(t, s, id, 0, UserTurn(0, "r", "hello")...)
	if info := stat("after an append"); info.LastSeq == 0 || info.FirstMessage != "hello" {
		t.Errorf("Stat after an append = %+v, want the last seq and the first message", *info)
	}
	for name, missing := range map[string]string{"never created": "st-missing", "bad": "../x"} {
		_, err := s.Stat(t.Context(), missing)
		want := cairn.ErrNotFound
		if name == "bad" {
			want = cairn.ErrInvalidID
		}
		if !errors.Is(err, want) {
			t.Errorf("Stat of a %s session: %v, want %v", name, err, want)
		}
	}
	idle := newSession(t, s, nil)
	h.clock.Advance(ttl + time.Minute)
	if _, err := s.Stat(t.Context(), idle); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Stat of an expired session: %v, want ErrNotFound", err)
	}
	gone := newSession(t, s, nil)
	if err := s.Delete(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(t.Context(), gone); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Stat of a deleted session: %v, want ErrNotFound", err)
	}
}
