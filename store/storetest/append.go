package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/wire"
)

func testCreate(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, map[string]string{"team": "a"})
	rec := mustLoad(t, s, id)
	if rec.Info.ID != id || rec.Info.LastSeq != 0 || len(rec.Events) != 0 {
		t.Fatalf("new session: got id %q last seq %d, %d events; want %q, 0, 0", rec.Info.ID, rec.Info.LastSeq, len(rec.Events), id)
	}
	if rec.Info.Status != cairn.StatusNew {
		t.Errorf("new session status = %q, want %q", rec.Info.Status, cairn.StatusNew)
	}
	if got := rec.Info.Labels["team"]; got != "a" {
		t.Errorf("label team = %q, want a", got)
	}
	if !rec.Info.CreatedAt.Equal(h.clock.Now()) {
		t.Errorf("created at = %v, want the store clock's %v", rec.Info.CreatedAt, h.clock.Now())
	}
}

func testCreateExists(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	mustAppend(t, s, id, 0, UserTurn(0, "r1", "hello")...)
	err := s.Create(t.Context(), cairn.SessionMeta{ID: id})
	if !errors.Is(err, cairn.ErrExists) {
		t.Fatalf("Create of an existing ID: got %v, want ErrExists", err)
	}
	if rec := mustLoad(t, s, id); rec.Info.LastSeq != 4 {
		t.Fatalf("refused Create changed the session: last seq %d, want 4", rec.Info.LastSeq)
	}
}

func testInvalidID(t *testing.T, h *harness) {
	s := h.store(t)
	bad := []string{"", "../etc", "a/b", `a\b`, "a b", "a.b", "é", strings.Repeat("x", 129), "..", "a\x00b", "%2e%2e"}
	for _, id := range bad {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("Create(%q): got %v, want ErrInvalidID", id, err)
		}
		if err := s.Append(t.Context(), id, 0, UserTurn(0, "r", "x")...); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("Append(%q): got %v, want ErrInvalidID", id, err)
		}
		if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("Load(%q): got %v, want ErrInvalidID", id, err)
		}
		if err := s.Delete(t.Context(), id); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("Delete(%q): got %v, want ErrInvalidID", id, err)
		}
	}
	for _, id := range []string{strings.Repeat("Z", 128), "_", "-", "A-z_09"} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Errorf("Create(%q) of a valid ID: %v", id, err)
		}
	}
	page, err := s.List(t.Context(), cairn.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 4 {
		t.Errorf("after refused creates, List has %d sessions, want the 4 valid ones", len(page.Sessions))
	}
}

func testAppendLoad(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	first := UserTurn(0, "r1", "first question")
	mustAppend(t, s, id, 0, first[:1]...)
	mustAppend(t, s, id, 1, first[1:]...)
	second := Conversation(4, "r2", "second")
	mustAppend(t, s, id, 4, second...)
	rec := mustLoad(t, s, id)
	want := append(append([]cairn.Event{}, first...), second...)
	assertEvents(t, rec.Events, want)
	if rec.Info.LastSeq != int64(len(want)) {
		t.Errorf("info last seq = %d, want %d", rec.Info.LastSeq, len(want))
	}
}

func testLoadFrom(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	evs := Conversation(0, "r1", "hi")
	mustAppend(t, s, id, 0, evs...)
	for _, from := range []int64{0, 1, 5, int64(len(evs)), int64(len(evs)) + 1} {
		rec, err := s.Load(t.Context(), id, from)
		if err != nil {
			t.Fatalf("Load from %d: %v", from, err)
		}
		start := max(from, 1) - 1
		want := []cairn.Event{}
		if start < int64(len(evs)) {
			want = evs[start:]
		}
		assertEvents(t, rec.Events, want)
	}
}

// testLoadFromTail: Load from a seq returns exactly the events from
// there on, in a history of small and large events (some larger than the
// blocks a store may read its log in) appended alone and in batches, for
// seqs at the start, the middle and the end, as the history grows.
func testLoadFromTail(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	var all []cairn.Event
	check := func(when string) {
		t.Helper()
		n := int64(len(all))
		for _, from := range []int64{1, 2, 3, n / 2, n - 11, n - 10, n - 1, n, n + 1, n + 100} {
			rec, err := s.Load(t.Context(), id, from)
			if err != nil {
				t.Fatalf("Load from %d %s: %v", from, when, err)
			}
			start := min(max(from, 1)-1, n)
			if len(rec.Events) != int(n-start) {
				t.Fatalf("Load from %d %s: %d events, want %d", from, when, len(rec.Events), n-start)
			}
			assertEvents(t, rec.Events, all[start:])
			if rec.Info.LastSeq != n {
				t.Fatalf("Load from %d %s: last seq %d, want %d", from, when, rec.Info.LastSeq, n)
			}
		}
	}
	for round, batch := range []int{1, 3, 7, 1, 12, 2, 30, 1, 5, 20} {
		evs := make([]cairn.Event, batch)
		for i := range evs {
			seq := int64(len(all) + i + 1)
			if seq%9 == 0 {
				evs[i] = Padded(seq, 70<<10)
			} else {
				evs[i] = Custom(seq, fmt.Sprintf("tail %d ✓", seq))
			}
		}
		mustAppend(t, s, id, int64(len(all)), evs...)
		all = append(all, evs...)
		if round%3 == 2 {
			check(fmt.Sprintf("after append %d", round+1))
		}
	}
	check("at the end")
	check("again")
}

func testAppendConflict(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	mustAppend(t, s, id, 0, UserTurn(0, "r1", "one")...)
	for _, expect := range []int64{0, 3, 5, 100} {
		err := s.Append(t.Context(), id, expect, Number(expect, Custom(1, "late"))...)
		if !errors.Is(err, cairn.ErrConflict) {
			t.Errorf("Append expecting seq %d when the last is 4: got %v, want ErrConflict", expect, err)
		}
	}
	rec := mustLoad(t, s, id)
	assertEvents(t, rec.Events, UserTurn(0, "r1", "one"))
}

func testAppendNotFound(t *testing.T, h *harness) {
	s := h.store(t)
	err := s.Append(t.Context(), "never-created", 0, UserTurn(0, "r", "x")...)
	if !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("Append to a missing session: got %v, want ErrNotFound", err)
	}
	if _, err := s.Load(t.Context(), "never-created", 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("Load after a refused Append: got %v, want ErrNotFound (an append must not create a session)", err)
	}
}

func testAppendInvalid(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	good := UserTurn(0, "r", "x")
	unknown := good[0]
	unknown.Kind = "made.up"
	badData := good[1]
	badData.Data = json.RawMessage(`{"parts":"not a list"}`)
	extraField := good[1]
	extraField.Data = json.RawMessage(`{"parts":[],"colour":"red"}`)
	missing := good[2]
	missing.Data = json.RawMessage(`{"text":"no other fields"}`)
	badVersion := good[0]
	badVersion.V = 9
	cases := map[string][]cairn.Event{
		"gap":           {good[0], good[2]},
		"repeat":        {good[0], good[0]},
		"starts at 2":   good[1:],
		"unknown kind":  {unknown},
		"mistyped data": {good[0], badData},
		"unknown field": {good[0], extraField},
		"missing field": {good[0], good[1], missing},
		"version":       {badVersion},
		"no events":     {},
	}
	for name, evs := range cases {
		err := s.Append(t.Context(), id, 0, evs...)
		if !errors.Is(err, cairn.ErrInvalidEvent) {
			t.Errorf("%s: got %v, want ErrInvalidEvent", name, err)
		}
	}
	if rec := mustLoad(t, s, id); len(rec.Events) != 0 || rec.Info.LastSeq != 0 {
		t.Fatalf("refused appends wrote %d events (last seq %d)", len(rec.Events), rec.Info.LastSeq)
	}
}

func testAppendAtomic(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	evs := Conversation(0, "r1", "hi")
	bad := evs[len(evs)-1]
	bad.Kind = "nope"
	batch := append(append([]cairn.Event{}, evs[:len(evs)-1]...), bad)
	if err := s.Append(t.Context(), id, 0, batch...); err == nil {
		t.Fatal("Append with an invalid last event succeeded")
	}
	rec := mustLoad(t, s, id)
	if len(rec.Events) != 0 {
		t.Fatalf("a refused multi-event append left %d events behind", len(rec.Events))
	}
	mustAppend(t, s, id, 0, evs...)
	assertEvents(t, mustLoad(t, s, id).Events, evs)
}

func testLimits(t *testing.T, h *harness) {
	s := h.storeWith(t, cairn.StoreOptions{Limits: cairn.Limits{MaxEventBytes: 4096, MaxAppendEvents: 10}})
	id := newSession(t, s, nil)
	if err := s.Append(t.Context(), id, 0, Padded(1, 8000)); !errors.Is(err, cairn.ErrTooLarge) {
		t.Errorf("8 KB event with a 4 KB limit: got %v, want ErrTooLarge", err)
	}
	many := make([]cairn.Event, 11)
	for i := range many {
		many[i] = Custom(int64(i+1), "x")
	}
	if err := s.Append(t.Context(), id, 0, many...); !errors.Is(err, cairn.ErrTooLarge) {
		t.Errorf("11 events with a limit of 10: got %v, want ErrTooLarge", err)
	}
	mustAppend(t, s, id, 0, Padded(1, 3000))
	mustAppend(t, s, id, 1, many[1:10]...)
	if rec := mustLoad(t, s, id); len(rec.Events) != 10 {
		t.Fatalf("got %d events, want 10", len(rec.Events))
	}
}

// assertEvents checks that got equals want: same seqs, kinds, runs, times
// and data (compared as canonical JSON).
func assertEvents(t *testing.T, got, want []cairn.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.V != w.V || g.Seq != w.Seq || g.Kind != w.Kind || g.Run != w.Run || !g.At.Equal(w.At) {
			t.Fatalf("event %d: got {v %d seq %d %s run %q at %v}, want {v %d seq %d %s run %q at %v}",
				i, g.V, g.Seq, g.Kind, g.Run, g.At, w.V, w.Seq, w.Kind, w.Run, w.At)
		}
		gc, err1 := wire.Canonical(g.Data)
		wc, err2 := wire.Canonical(w.Data)
		if err1 != nil || err2 != nil || string(gc) != string(wc) {
			t.Fatalf("event %d (seq %d) data:\n got %s\nwant %s", i, w.Seq, g.Data, w.Data)
		}
	}
}
