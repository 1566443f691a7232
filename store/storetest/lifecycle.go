package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

func testDelete(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	other := newSession(t, s, nil)
	mustAppend(t, s, id, 0, Conversation(0, "r1", "secret")...)
	mustAppend(t, s, other, 0, UserTurn(0, "r1", "keep me")...)
	if err := s.Delete(t.Context(), id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Load after Delete: got %v, want ErrNotFound", err)
	}
	if err := s.Append(t.Context(), id, 16, Custom(17, "late")); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("late Append after Delete: got %v, want ErrNotFound", err)
	}
	if err := s.Append(t.Context(), id, 0, Custom(1, "late")); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Append at seq 0 after Delete: got %v, want ErrNotFound", err)
	}
	if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("a late append brought the session back: %v", err)
	}
	if err := s.Delete(t.Context(), id); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("second Delete: got %v, want ErrNotFound", err)
	}
	if got := ids(listAll(t, s, cairn.ListOptions{})); len(got) != 1 || got[0] != other {
		t.Errorf("List after Delete = %v, want only %s", got, other)
	}
	assertEvents(t, mustLoad(t, s, other).Events, UserTurn(0, "r1", "keep me"))
	// The ID can be used again, and starts empty.
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatalf("Create after Delete: %v", err)
	}
	if rec := mustLoad(t, s, id); len(rec.Events) != 0 || rec.Info.Steps != 0 || rec.Info.FirstMessage != "" {
		t.Fatalf("re-created session kept old data: %d events, %d steps, first %q", len(rec.Events), rec.Info.Steps, rec.Info.FirstMessage)
	}
}

// testTTL expires sessions on the store's clock, without sleeping: a session
// is visible until TTL after its last update and invisible at once after,
// to Load, List, Append and Delete alike.
func testTTL(t *testing.T, h *harness) {
	const ttl = time.Hour
	s := h.storeWith(t, cairn.StoreOptions{TTL: ttl})
	id := newSession(t, s, nil)
	idle := newSession(t, s, nil)
	h.clock.Advance(ttl - time.Minute)
	mustAppend(t, s, id, 0, UserTurn(0, "r", "still here")...) // refreshes id, not idle
	h.clock.Advance(2 * time.Minute)

	if _, err := s.Load(t.Context(), idle, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Load of a session idle past its TTL: got %v, want ErrNotFound", err)
	}
	if err := s.Append(t.Context(), idle, 0, Custom(1, "x")); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Append to an expired session: got %v, want ErrNotFound", err)
	}
	if got := ids(listAll(t, s, cairn.ListOptions{})); len(got) != 1 || got[0] != id {
		t.Errorf("List = %v, want only the refreshed %s", got, id)
	}
	mustLoad(t, s, id)

	h.clock.Advance(ttl)
	if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Load past TTL after the last append: got %v, want ErrNotFound", err)
	}
	if got := listAll(t, s, cairn.ListOptions{}); len(got) != 0 {
		t.Errorf("List past every TTL = %v, want none", ids(got))
	}
	if sw, ok := s.(cairn.Sweeper); ok {
		if _, err := sw.Sweep(t.Context()); err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
			t.Errorf("Load after Sweep: got %v, want ErrNotFound", err)
		}
	}
	// An expired ID is free again.
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: idle}); err != nil {
		t.Errorf("Create with an expired session's ID: %v", err)
	}
	if rec := mustLoad(t, s, idle); len(rec.Events) != 0 {
		t.Errorf("re-created session has %d old events", len(rec.Events))
	}
}

func testNamespaces(t *testing.T, h *harness) {
	a := h.storeWith(t, cairn.StoreOptions{Namespace: h.ns + "_a"})
	b := h.storeWith(t, cairn.StoreOptions{Namespace: h.ns + "_b"})
	const id = "shared-id"
	for _, s := range []cairn.Store{a, b} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatalf("Create the same ID in two namespaces: %v", err)
		}
	}
	mustAppend(t, a, id, 0, UserTurn(0, "r", "in a")...)
	onlyA := newSession(t, a, nil)
	if rec := mustLoad(t, b, id); len(rec.Events) != 0 {
		t.Errorf("namespace b sees %d events appended in a", len(rec.Events))
	}
	if _, err := b.Load(t.Context(), onlyA, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("b loads a's session: %v", err)
	}
	if err := b.Delete(t.Context(), onlyA); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("b deletes a's session: %v", err)
	}
	if got := ids(listAll(t, b, cairn.ListOptions{})); len(got) != 1 || got[0] != id {
		t.Errorf("b lists %v, want only its own %s", got, id)
	}
	if got := listAll(t, a, cairn.ListOptions{}); len(got) != 2 {
		t.Errorf("a lists %v, want its 2", ids(got))
	}
	if err := b.Delete(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	assertEvents(t, mustLoad(t, a, id).Events, UserTurn(0, "r", "in a"))
}

func testClosed(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("Load after Close: got %v, want ErrClosed", err)
	}
	if err := s.Append(t.Context(), id, 0, Custom(1, "x")); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("Append after Close: got %v, want ErrClosed", err)
	}
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("Create after Close: got %v, want ErrClosed", err)
	}
}
