package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// testAppendRetried sends appends again as a caller does after losing the
// reply to the first: one event, several, the tail of the last append and
// events as Load returned them. Each returns nil and changes nothing.
//
// With testAppendRetriedStale and testLeaseAppendFencedRetried, it checks
// the retried-append rule (cairn.Store's Append): when the session holds
// exactly the events given, at the seqs given, with the same envelope
// (version, seq, time, kind, run, data), Append returns nil and writes
// nothing, whether they are its last events or others were appended after
// them since; any other append at a stale expected seq returns
// cairn.ErrConflict, which always means that nothing of the call was
// written. AppendFenced keeps the rule with the same lease.
func testAppendRetried(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	one := Custom(1, "one")
	mustAppend(t, s, id, 0, one)
	before := mustLoad(t, s, id)
	h.clock.Advance(time.Minute)
	if err := s.Append(t.Context(), id, 0, one); err != nil {
		t.Fatalf("Append of one event again at seq 0, the session's last: got %v, want nil (a retried append)", err)
	}
	assertUnchanged(t, s, id, before)

	turn := UserTurn(1, "r1", "several events")
	mustAppend(t, s, id, 1, turn...)
	before = mustLoad(t, s, id)
	h.clock.Advance(time.Minute)
	retries := []struct {
		name   string
		expect int64
		events []cairn.Event
	}{
		{"the same 4 events", 1, turn},
		{"the same 4 events, a second time", 1, turn},
		{"the last 2 of them", 3, turn[2:]},
		{"the last one", 4, turn[3:]},
		{"the 4 events as Load returned them", 1, before.Events[1:]},
	}
	for _, r := range retries {
		if err := s.Append(t.Context(), id, r.expect, r.events...); err != nil {
			t.Errorf("Append of %s at seq %d, the session's last events: got %v, want nil (a retried append)", r.name, r.expect, err)
		}
	}
	assertUnchanged(t, s, id, before)
	if reopened := mustLoad(t, h.store(t), id); reopened.Info.LastSeq != before.Info.LastSeq {
		t.Errorf("after a reopen the last seq is %d, want %d", reopened.Info.LastSeq, before.Info.LastSeq)
	}
}

// testAppendRetriedStale: at a stale expected seq, anything but events
// stored exactly at the seqs given is a conflict, and writes nothing; the
// events as stored are a retry whether they are the session's last or
// were followed by others since (a client library that sent the append
// again after a lost reply, while another writer appended).
func testAppendRetriedStale(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	one := Custom(1, "one")
	mustAppend(t, s, id, 0, one)
	turn := UserTurn(1, "r1", "a question")
	mustAppend(t, s, id, 1, turn...)
	before := mustLoad(t, s, id)
	h.clock.Advance(time.Minute)
	for _, c := range staleCases(turn) {
		if err := s.Append(t.Context(), id, c.expect, c.events...); !errors.Is(err, cairn.ErrConflict) {
			t.Errorf("Append of %s at seq %d: got %v, want ErrConflict", c.name, c.expect, err)
		}
	}
	assertUnchanged(t, s, id, before)

	// Events stored at their seqs, with others after them, are a retry.
	later := Custom(6, "later")
	mustAppend(t, s, id, 5, later)
	before = mustLoad(t, s, id)
	h.clock.Advance(time.Minute)
	for _, r := range followedCases(one, turn) {
		if err := s.Append(t.Context(), id, r.expect, r.events...); err != nil {
			t.Errorf("Append of %s at seq %d, stored there with later events after them: got %v, want nil (a retried append)", r.name, r.expect, err)
		}
	}
	if err := s.Append(t.Context(), id, 5, later); err != nil {
		t.Errorf("Append of seq 6 again, the last: got %v, want nil", err)
	}
	// Anything else is still a conflict.
	for _, c := range staleCases(turn) {
		if err := s.Append(t.Context(), id, c.expect, c.events...); !errors.Is(err, cairn.ErrConflict) {
			t.Errorf("Append of %s at seq %d once seq 6 follows: got %v, want ErrConflict", c.name, c.expect, err)
		}
	}
	if err := s.Append(t.Context(), id, 5, Custom(6, "not later")); !errors.Is(err, cairn.ErrConflict) {
		t.Errorf("Append of another event at seq 6: got %v, want ErrConflict", err)
	}
	assertUnchanged(t, s, id, before)
	if reopened := mustLoad(t, h.store(t), id); reopened.Info.LastSeq != 6 {
		t.Errorf("after a reopen the last seq is %d, want 6", reopened.Info.LastSeq)
	}
}

// followedCases are retries of events of a session holding one at seq 1,
// turn at seqs 2 to 5 and one more event after them: each is stored
// exactly at the seqs given, with later events after it.
func followedCases(one cairn.Event, turn []cairn.Event) []staleCase {
	return []staleCase{
		{"the event appended first", 0, []cairn.Event{one}},
		{"the same 4 events", 1, turn},
		{"the same 4 events, a second time", 1, turn},
		{"the first 3 of the 4 events", 1, turn[:3]},
		{"the middle 2 of the 4 events", 2, turn[1:3]},
		{"the first event and the 4 after it", 0, append([]cairn.Event{one}, turn...)},
	}
}

// staleCase is an append at a stale expected seq that is not a retry.
type staleCase struct {
	name   string
	expect int64
	events []cairn.Event
}

// staleCases are the appends that conflict with a session holding an
// event at seq 1 and turn at seqs 2 to 5, whether turn holds its last
// events or others follow: none is stored exactly at the seqs it gives.
func staleCases(turn []cairn.Event) []staleCase {
	changed := func(i int, f func(*cairn.Event)) []cairn.Event {
		c := slices.Clone(turn)
		f(&c[i])
		return c
	}
	return []staleCase{
		{"other events at the same seqs", 1, UserTurn(1, "r1", "another question")},
		{"the same events but one's data", 1, changed(1, func(e *cairn.Event) {
			e.Data = cairn.MustEvent(cairn.KindMessageUser, e.Run, cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "edited"}}}).Data
		})},
		{"the same events but one's time, 1 ns later", 1, changed(3, func(e *cairn.Event) { e.At = e.At.Add(time.Nanosecond) })},
		{"the same events but one's time, a second earlier", 1, changed(0, func(e *cairn.Event) { e.At = e.At.Add(-time.Second) })},
		{"the same events but one's run", 1, changed(2, func(e *cairn.Event) { e.Run = "r2" })},
		{"the same events but another kind last", 1, changed(3, func(e *cairn.Event) {
			c := Custom(5, "not the end")
			c.At, c.Run = e.At, e.Run
			*e = c
		})},
		{"the 4 events and one more", 1, append(slices.Clone(turn), Custom(6, "more"))},
		{"another event at seq 1", 0, []cairn.Event{Custom(1, "not one")}},
		{"the 4 events one seq early", 0, Number(0, turn...)},
	}
}

// assertUnchanged checks that session id still holds what before shows:
// the same events and the same info, its updated time included.
func assertUnchanged(t *testing.T, s cairn.Store, id string, before *cairn.Record) {
	t.Helper()
	after := mustLoad(t, s, id)
	assertEvents(t, after.Events, before.Events)
	a, b := after.Info, before.Info
	if a.LastSeq != b.LastSeq || a.Steps != b.Steps || a.Status != b.Status || a.FirstMessage != b.FirstMessage || !a.UpdatedAt.Equal(b.UpdatedAt) {
		t.Errorf("info changed: {last seq %d, %d steps, %s, first %q, updated %s}, was {last seq %d, %d steps, %s, first %q, updated %s}",
			a.LastSeq, a.Steps, a.Status, a.FirstMessage, a.UpdatedAt, b.LastSeq, b.Steps, b.Status, b.FirstMessage, b.UpdatedAt)
	}
}

// testLeaseAppendFencedRetried: AppendFenced keeps the retried-append rule
// with the same lease, and a lost lease refuses even an identical retry.
func testLeaseAppendFencedRetried(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	id := newSession(t, s, nil)
	a := mustAcquire(t, l, id, "worker-a")
	one := Custom(1, "one")
	if err := l.AppendFenced(t.Context(), id, a, 0, one); err != nil {
		t.Fatalf("AppendFenced: %v", err)
	}
	h.clock.Advance(time.Second)
	if err := l.AppendFenced(t.Context(), id, a, 0, one); err != nil {
		t.Errorf("AppendFenced of one event again, the session's last: got %v, want nil", err)
	}
	turn := UserTurn(1, "r1", "fenced")
	if err := l.AppendFenced(t.Context(), id, a, 1, turn...); err != nil {
		t.Fatalf("AppendFenced: %v", err)
	}
	before := mustLoad(t, s, id)
	h.clock.Advance(time.Second)
	for i := range 2 {
		if err := l.AppendFenced(t.Context(), id, a, 1, turn...); err != nil {
			t.Errorf("AppendFenced of the same 4 events again (%d): got %v, want nil", i+1, err)
		}
	}
	for _, c := range staleCases(turn) {
		if err := l.AppendFenced(t.Context(), id, a, c.expect, c.events...); !errors.Is(err, cairn.ErrConflict) {
			t.Errorf("AppendFenced of %s at seq %d: got %v, want ErrConflict", c.name, c.expect, err)
		}
	}
	assertUnchanged(t, s, id, before)

	// Stored with a later event after them, they are still a retry.
	later := Custom(6, "later")
	if err := l.AppendFenced(t.Context(), id, a, 5, later); err != nil {
		t.Fatalf("AppendFenced: %v", err)
	}
	before = mustLoad(t, s, id)
	h.clock.Advance(time.Second)
	for _, r := range followedCases(one, turn) {
		if err := l.AppendFenced(t.Context(), id, a, r.expect, r.events...); err != nil {
			t.Errorf("AppendFenced of %s at seq %d, stored there with a later event after them: got %v, want nil", r.name, r.expect, err)
		}
	}
	for _, c := range staleCases(turn) {
		if err := l.AppendFenced(t.Context(), id, a, c.expect, c.events...); !errors.Is(err, cairn.ErrConflict) {
			t.Errorf("AppendFenced of %s at seq %d once seq 6 follows: got %v, want ErrConflict", c.name, c.expect, err)
		}
	}
	assertUnchanged(t, s, id, before)

	b, err := l.Takeover(t.Context(), id, "worker-b", leaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AppendFenced(t.Context(), id, a, 1, turn...); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("AppendFenced of the same events again after a takeover: got %v, want ErrLeaseLost", err)
	}
	if err := l.AppendFenced(t.Context(), id, b, 6, Custom(7, "b")); err != nil {
		t.Fatalf("AppendFenced by the new holder: %v", err)
	}
	if err := l.AppendFenced(t.Context(), id, a, 6, Custom(7, "b")); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("AppendFenced with the lost lease of the new holder's last event: got %v, want ErrLeaseLost", err)
	}
	if got := mustLoad(t, s, id); len(got.Events) != 7 || got.Info.LastSeq != 7 {
		t.Errorf("after the takeover the session holds %d events, last seq %d; want 7 and 7", len(got.Events), got.Info.LastSeq)
	}
}
