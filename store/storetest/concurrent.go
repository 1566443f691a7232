package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
)

// testConcurrentAppend races 16 writers at the same expected seq, round
// after round: exactly one wins each round, the rest get ErrConflict, and
// the history holds exactly the winners' events, dense and unforked.
func testConcurrentAppend(t *testing.T, h *harness) {
	const writers, rounds = 16, 8
	s := h.store(t)
	id := newSession(t, s, nil)
	var winners []string
	for round := range rounds {
		expect := int64(round * 2)
		won, errs := Race(writers, cairn.ErrConflict, func(w int) (string, error) {
			tag := fmt.Sprintf("r%d-w%d", round, w)
			return tag, s.Append(t.Context(), id, expect, Custom(expect+1, tag), Custom(expect+2, tag))
		})
		if len(errs) > 0 {
			t.Fatalf("round %d: writers failed with errors other than ErrConflict: %v", round, errs)
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d writers won at expected seq %d (%v), want exactly 1", round, len(won), expect, won)
		}
		winners = append(winners, won[0])
	}
	rec := mustLoad(t, s, id)
	if len(rec.Events) != writers*0+rounds*2 {
		t.Fatalf("history has %d events, want %d", len(rec.Events), rounds*2)
	}
	for i, e := range rec.Events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the history forked or has a gap", i, e.Seq)
		}
		var c cairn.Custom
		if err := json.Unmarshal(e.Data, &c); err != nil {
			t.Fatal(err)
		}
		var tag string
		_ = json.Unmarshal(c.Payload, &tag)
		if want := winners[i/2]; tag != want {
			t.Fatalf("seq %d written by %s, but round %d was won by %s: a loser's event got in", e.Seq, tag, i/2, want)
		}
	}
	if rec.Info.LastSeq != rounds*2 {
		t.Errorf("info last seq = %d, want %d", rec.Info.LastSeq, rounds*2)
	}
}

// testConcurrentSessions appends to 8 sessions from 8 goroutines at once;
// every append must succeed and every history come back whole.
func testConcurrentSessions(t *testing.T, h *harness) {
	const sessions, appends = 8, 12
	s := h.store(t)
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = newSession(t, s, nil)
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for _, id := range ids {
		wg.Go(func() {
			for i := range appends {
				if err := s.Append(t.Context(), id, int64(i), Custom(int64(i+1), id)); err != nil {
					errs <- fmt.Errorf("session %s append %d: %w", id, i+1, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, id := range ids {
		if rec := mustLoad(t, s, id); len(rec.Events) != appends {
			t.Errorf("session %s has %d events, want %d", id, len(rec.Events), appends)
		}
	}
}

// testReplayEquality folds a session, saves it in several appends, reopens
// the store and checks that the reloaded session's snapshot is equal byte
// for byte and that its memory document is identical.
func testReplayEquality(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	evs := append(Conversation(0, "r1", "What is 2*(3+4)? ✓"), UserTurn(16, "r2", "and again")...)
	evs = append(evs, Conversation(int64(len(evs)), "r3", "third <html> & \"quotes\"")...)
	for i := 0; i < len(evs); {
		n := min(1+i%3, len(evs)-i)
		mustAppend(t, s, id, int64(i), evs[i:i+n]...)
		i += n
	}
	orig, err := cairn.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := orig.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	wantDoc := dump(t, evs)

	reopened := h.store(t)
	rec := mustLoad(t, reopened, id)
	got, err := cairn.Fold(rec.Events)
	if err != nil {
		t.Fatalf("fold reloaded events: %v", err)
	}
	gotSnap, err := got.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotSnap, want) {
		t.Fatalf("snapshot after reload differs:\n got %s\nwant %s", gotSnap, want)
	}
	if gotDoc := dump(t, rec.Events); !bytes.Equal(gotDoc, wantDoc) {
		t.Fatalf("memory document after reload differs:\n got %s\nwant %s", gotDoc, wantDoc)
	}
	if rec.Info.Steps != got.Steps || rec.Info.Status != got.Status || rec.Info.FirstMessage != got.FirstMessage {
		t.Errorf("info {steps %d status %s first %q} disagrees with the folded state {steps %d status %s first %q}",
			rec.Info.Steps, rec.Info.Status, rec.Info.FirstMessage, got.Steps, got.Status, got.FirstMessage)
	}
}

func dump(t *testing.T, evs []cairn.Event) []byte {
	t.Helper()
	m, err := cairn.NewMemory(evs...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.DumpJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testLongHistory appends 1,500 events in batches and loads them back in
// order, whole and from the middle.
func testLongHistory(t *testing.T, h *harness) {
	const total, batch = 1500, 100
	s := h.store(t)
	id := newSession(t, s, nil)
	for last := int64(0); last < total; last += batch {
		evs := make([]cairn.Event, batch)
		for i := range evs {
			evs[i] = Custom(last+int64(i)+1, fmt.Sprint(last+int64(i)+1))
		}
		mustAppend(t, s, id, last, evs...)
	}
	rec := mustLoad(t, s, id)
	if len(rec.Events) != total {
		t.Fatalf("loaded %d events, want %d", len(rec.Events), total)
	}
	for i, e := range rec.Events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	tail, err := s.Load(t.Context(), id, total-9)
	if err != nil {
		t.Fatal(err)
	}
	if len(tail.Events) != 10 || tail.Events[0].Seq != total-9 {
		t.Fatalf("Load from %d: got %d events starting at seq %d", total-9, len(tail.Events), tail.Events[0].Seq)
	}
}
