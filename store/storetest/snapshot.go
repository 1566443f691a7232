package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// runSnapshots runs the snapshot section of the suite, for a backend that
// declares Snapshots. Time moves on the harness's clock only.
func runSnapshots(t *testing.T, open Opener, abilities Abilities) {
	tests := []struct {
		name string
		fn   func(*testing.T, *harness, cairn.Snapshotter)
	}{
		{"RoundTrip", testSnapshotRoundTrip},
		{"Highest", testSnapshotHighest},
		{"Invalid", testSnapshotInvalid},
		{"NotFound", testSnapshotNotFound},
		{"Delete", testSnapshotDelete},
		{"TTL", testSnapshotTTL},
		{"Untouched", testSnapshotUntouched},
		{"Drop", testSnapshotDrop},
		{"Namespaces", testSnapshotNamespaces},
		{"Concurrent", testSnapshotConcurrent},
		{"Restore", testSnapshotRestore},
	}
	for _, tt := range tests {
		t.Run("Snapshot/"+tt.name, func(t *testing.T) {
			h := newHarness(open, abilities)
			tt.fn(t, h, as[cairn.Snapshotter](t, h.store(t)))
		})
	}
}

func mustPutSnapshot(t *testing.T, sn cairn.Snapshotter, id string, snap cairn.Snapshot) {
	t.Helper()
	if err := sn.PutSnapshot(t.Context(), id, snap); err != nil {
		t.Fatalf("PutSnapshot(%s, seq %d, %d bytes): %v", id, snap.Seq, len(snap.Data), err)
	}
}

// wantSnapshot checks that session id's snapshot is want (nil: none).
func wantSnapshot(t *testing.T, sn cairn.Snapshotter, id string, want *cairn.Snapshot, when string) {
	t.Helper()
	got, err := sn.LoadSnapshot(t.Context(), id)
	switch {
	case err != nil:
		t.Errorf("LoadSnapshot(%s) %s: %v", id, when, err)
	case want == nil && got != nil:
		t.Errorf("LoadSnapshot(%s) %s = seq %d (%d bytes), want none", id, when, got.Seq, len(got.Data))
	case want != nil && got == nil:
		t.Errorf("LoadSnapshot(%s) %s = none, want seq %d", id, when, want.Seq)
	case want != nil && (got.Seq != want.Seq || !bytes.Equal(got.Data, want.Data)):
		t.Errorf("LoadSnapshot(%s) %s = seq %d with %s, want seq %d with %s", id, when,
			got.Seq, abbrev(got.Data), want.Seq, abbrev(want.Data))
	}
}

// abbrev shows data in a message: short data whole, long data by its size
// and its start.
func abbrev(b []byte) string {
	if len(b) <= 64 {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%d bytes starting %q", len(b), b[:32])
}

// snapData returns data for a test snapshot: tag, then non-ASCII text and
// every byte value, so that a store that keeps text rather than bytes, or
// trims or escapes anything, fails the round trip.
func snapData(tag string) []byte {
	b := []byte(tag + " — état ✓ 日本語 \"quoted\" \\ <b>&</b> \n")
	for i := range 256 {
		b = append(b, byte(i))
	}
	return append(b, tag...)
}

// bigData returns n bytes of varied, incompressible-looking data.
func bigData(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// testSnapshotRoundTrip: a snapshot comes back byte for byte, small or
// about 1 MiB, and survives a reopen; a live session without one has none;
// neither the caller's slice nor the returned one is shared with the store.
func testSnapshotRoundTrip(t *testing.T, h *harness, sn cairn.Snapshotter) {
	s := sn.(cairn.Store)
	id := newSession(t, s, nil)
	wantSnapshot(t, sn, id, nil, "of a new session")
	evs := Conversation(0, "r1", "snapshot me")
	mustAppend(t, s, id, 0, evs...)
	wantSnapshot(t, sn, id, nil, "of a session with events and no snapshot")

	small := cairn.Snapshot{Seq: 5, Data: snapData("small")}
	given := slices.Clone(small.Data)
	mustPutSnapshot(t, sn, id, cairn.Snapshot{Seq: 5, Data: given})
	given[0] = '!' // the store keeps what it was given at the call
	wantSnapshot(t, sn, id, &small, "after a Put")
	if got, err := sn.LoadSnapshot(t.Context(), id); err == nil && got != nil {
		got.Data[0] = '?'
	}
	wantSnapshot(t, sn, id, &small, "after the caller changed a loaded copy")

	big := cairn.Snapshot{Seq: 16, Data: bigData(1<<20+7, 1)}
	mustPutSnapshot(t, sn, id, big)
	wantSnapshot(t, sn, id, &big, "of 1 MiB")
	wantSnapshot(t, as[cairn.Snapshotter](t, h.store(t)), id, &big, "in a store opened again")
	// The events are as they were.
	assertEvents(t, mustLoad(t, s, id).Events, evs)
}

// testSnapshotHighest: a store keeps the snapshot with the highest seq; an
// older one is dropped without an error, and one at the same seq
// replaces it.
func testSnapshotHighest(t *testing.T, h *harness, sn cairn.Snapshotter) {
	s := sn.(cairn.Store)
	id := newSession(t, s, nil)
	mustAppend(t, s, id, 0, Conversation(0, "r1", "highest")...)
	ten := cairn.Snapshot{Seq: 10, Data: snapData("ten")}
	mustPutSnapshot(t, sn, id, ten)
	mustPutSnapshot(t, sn, id, cairn.Snapshot{Seq: 4, Data: snapData("four")})
	wantSnapshot(t, sn, id, &ten, "after an older Put")
	again := cairn.Snapshot{Seq: 10, Data: snapData("ten again")}
	mustPutSnapshot(t, sn, id, again)
	wantSnapshot(t, sn, id, &again, "after a Put at the same seq")
	// A snapshot past the session's last seq is the caller's business:
	// the store keeps it (Restore finds it stale).
	far := cairn.Snapshot{Seq: 1000, Data: snapData("far")}
	mustPutSnapshot(t, sn, id, far)
	wantSnapshot(t, sn, id, &far, "after a Put past the last seq")
	mustPutSnapshot(t, sn, id, ten)
	wantSnapshot(t, sn, id, &far, "after an older Put")
}

// testSnapshotInvalid: a snapshot with no seq or no data, or an invalid
// ID, is refused and changes nothing.
func testSnapshotInvalid(t *testing.T, h *harness, sn cairn.Snapshotter) {
	s := sn.(cairn.Store)
	id := newSession(t, s, nil)
	mustAppend(t, s, id, 0, UserTurn(0, "r1", "invalid")...)
	keep := cairn.Snapshot{Seq: 2, Data: snapData("keep")}
	mustPutSnapshot(t, sn, id, keep)
	for name, snap := range map[string]cairn.Snapshot{
		"seq 0":        {Seq: 0, Data: snapData("zero")},
		"seq -1":       {Seq: -1, Data: snapData("negative")},
		"no data":      {Seq: 3},
		"empty data":   {Seq: 3, Data: []byte{}},
		"seq 0, empty": {},
	} {
		err := sn.PutSnapshot(t.Context(), id, snap)
		if !errors.Is(err, cairn.ErrSnapshotInvalid) {
			t.Errorf("PutSnapshot of %s: got %v, want ErrSnapshotInvalid", name, err)
		}
	}
	wantSnapshot(t, sn, id, &keep, "after refused Puts")
	for _, bad := range []string{"", "../x", strings.Repeat("a", 129), "a/b", "a b"} {
		if err := sn.PutSnapshot(t.Context(), bad, keep); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("PutSnapshot(%q): got %v, want ErrInvalidID", bad, err)
		}
		if _, err := sn.LoadSnapshot(t.Context(), bad); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("LoadSnapshot(%q): got %v, want ErrInvalidID", bad, err)
		}
		if err := sn.DropSnapshot(t.Context(), bad); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("DropSnapshot(%q): got %v, want ErrInvalidID", bad, err)
		}
	}
}

// wantSnapshotNotFound checks that the three snapshot calls on id return
// ErrNotFound, and that none of them brought the session back.
func wantSnapshotNotFound(t *testing.T, s cairn.Store, id, what string) {
	t.Helper()
	sn := as[cairn.Snapshotter](t, s)
	if err := sn.PutSnapshot(t.Context(), id, cairn.Snapshot{Seq: 1, Data: snapData("late")}); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("PutSnapshot of %s: got %v, want ErrNotFound", what, err)
	}
	if snap, err := sn.LoadSnapshot(t.Context(), id); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("LoadSnapshot of %s: got %v, %v; want ErrNotFound", what, snap, err)
	}
	if err := sn.DropSnapshot(t.Context(), id); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("DropSnapshot of %s: got %v, want ErrNotFound", what, err)
	}
	if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Load of %s after the snapshot calls: got %v, want ErrNotFound (a snapshot brought it back)", what, err)
	}
	if slices.Contains(ids(listAll(t, s, cairn.ListOptions{})), id) {
		t.Errorf("List shows %s after the snapshot calls", what)
	}
}

// testSnapshotNotFound: the snapshot calls on a session never created
// return ErrNotFound and create nothing.
func testSnapshotNotFound(t *testing.T, h *harness, sn cairn.Snapshotter) {
	wantSnapshotNotFound(t, sn.(cairn.Store), "never-created", "a session never created")
}

// testSnapshotDelete: Delete removes the snapshot with the session; the
// snapshot calls on the deleted session return ErrNotFound without
// bringing it back; a session created again with the ID has no snapshot.
func testSnapshotDelete(t *testing.T, h *harness, sn cairn.Snapshotter) {
	s := sn.(cairn.Store)
	id := newSession(t, s, nil)
	other := newSession(t, s, nil)
	mustAppend(t, s, id, 0, Conversation(0, "r1", "deleted")...)
	mustAppend(t, s, other, 0, UserTurn(0, "r1", "kept")...)
	mustPutSnapshot(t, sn, id, cairn.Snapshot{Seq: 16, Data: snapData("deleted")})
	kept := cairn.Snapshot{Seq: 4, Data: snapData("kept")}
	mustPutSnapshot(t, sn, other, kept)
	if err := s.Delete(t.Context(), id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantSnapshotNotFound(t, s, id, "a deleted session")
	wantSnapshot(t, sn, other, &kept, "of another session after a Delete")
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatalf("Create after Delete: %v", err)
	}
	wantSnapshot(t, sn, id, nil, "of a session created again after a Delete")
	mustAppend(t, s, id, 0, UserTurn(0, "r2", "new life")...)
	wantSnapshot(t, sn, id, nil, "of a session created again, after its first append")
	if h.abilities.Sweep {
		if _, err := as[driver.Sweeper](t, s).Sweep(t.Context()); err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		wantSnapshot(t, sn, id, nil, "of a session created again, after a Sweep")
		wantSnapshot(t, sn, other, &kept, "of a live session after a Sweep")
	}
}

// testSnapshotTTL: a snapshot expires with its session, on the store's
// clock: the calls return ErrNotFound at once, Sweep removes it, and a
// session created again with the ID has none.
func testSnapshotTTL(t *testing.T, h *harness, _ cairn.Snapshotter) {
	const ttl = time.Hour
	s := h.storeWith(t, cairn.StoreOptions{TTL: ttl})
	sn := as[cairn.Snapshotter](t, s) // a store of its own, with a TTL
	id := newSession(t, s, nil)
	swept := newSession(t, s, nil)
	mustAppend(t, s, id, 0, UserTurn(0, "r1", "expires")...)
	mustAppend(t, s, swept, 0, UserTurn(0, "r1", "swept")...)
	mustPutSnapshot(t, sn, id, cairn.Snapshot{Seq: 4, Data: snapData("expires")})
	mustPutSnapshot(t, sn, swept, cairn.Snapshot{Seq: 4, Data: snapData("swept")})
	h.clock.Advance(ttl + time.Second)
	wantSnapshotNotFound(t, s, id, "an expired session")
	if h.abilities.Sweep {
		if _, err := as[driver.Sweeper](t, s).Sweep(t.Context()); err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		wantSnapshotNotFound(t, s, swept, "a swept session")
	}
	for _, reused := range []string{id, swept} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: reused}); err != nil {
			t.Fatalf("Create with an expired session's ID: %v", err)
		}
		wantSnapshot(t, sn, reused, nil, "of a session created with an expired one's ID")
	}
}

// testSnapshotUntouched: PutSnapshot and DropSnapshot change neither the
// session's info (its updated time included) nor List's order, nor when
// the session expires.
func testSnapshotUntouched(t *testing.T, h *harness, _ cairn.Snapshotter) {
	const ttl = time.Hour
	s := h.storeWith(t, cairn.StoreOptions{TTL: ttl})
	sn := as[cairn.Snapshotter](t, s) // a store of its own, with a TTL
	older := newSession(t, s, nil)
	mustAppend(t, s, older, 0, UserTurn(0, "r1", "older")...)
	h.clock.Advance(time.Minute)
	newer := newSession(t, s, nil)
	mustAppend(t, s, newer, 0, UserTurn(0, "r1", "newer")...)
	before := mustLoad(t, s, older)
	order := ids(listAll(t, s, cairn.ListOptions{}))
	h.clock.Advance(ttl - 2*time.Minute) // older has a minute left
	mustPutSnapshot(t, sn, older, cairn.Snapshot{Seq: 4, Data: snapData("untouched")})
	if err := sn.DropSnapshot(t.Context(), older); err != nil {
		t.Fatalf("DropSnapshot: %v", err)
	}
	mustPutSnapshot(t, sn, older, cairn.Snapshot{Seq: 3, Data: snapData("untouched")})
	assertUnchanged(t, s, older, before)
	if got := ids(listAll(t, s, cairn.ListOptions{})); !slices.Equal(got, order) {
		t.Errorf("List after snapshot calls = %v, want %v as before", got, order)
	}
	h.clock.Advance(90 * time.Second)
	if _, err := s.Load(t.Context(), older, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Load past the TTL of the last append, snapshots put since: got %v, want ErrNotFound (a snapshot moved the expiry)", err)
	}
	mustLoad(t, s, newer)
}

// testSnapshotDrop: DropSnapshot removes the snapshot, and the next Put,
// of any seq, stores its own; dropping none is fine.
func testSnapshotDrop(t *testing.T, h *harness, sn cairn.Snapshotter) {
	s := sn.(cairn.Store)
	id := newSession(t, s, nil)
	if err := sn.DropSnapshot(t.Context(), id); err != nil {
		t.Errorf("DropSnapshot of a session without one: %v", err)
	}
	mustAppend(t, s, id, 0, Conversation(0, "r1", "dropped")...)
	mustPutSnapshot(t, sn, id, cairn.Snapshot{Seq: 12, Data: snapData("dropped")})
	if err := sn.DropSnapshot(t.Context(), id); err != nil {
		t.Fatalf("DropSnapshot: %v", err)
	}
	wantSnapshot(t, sn, id, nil, "after DropSnapshot")
	wantSnapshot(t, as[cairn.Snapshotter](t, h.store(t)), id, nil, "after DropSnapshot, in a store opened again")
	if err := sn.DropSnapshot(t.Context(), id); err != nil {
		t.Errorf("second DropSnapshot: %v", err)
	}
	low := cairn.Snapshot{Seq: 3, Data: snapData("after the drop")}
	mustPutSnapshot(t, sn, id, low)
	wantSnapshot(t, sn, id, &low, "after a Put of a lower seq than the dropped one")
	assertEvents(t, mustLoad(t, s, id).Events, Conversation(0, "r1", "dropped"))
}

// testSnapshotNamespaces: two namespaces never see each other's
// snapshots, even of sessions with the same ID.
func testSnapshotNamespaces(t *testing.T, h *harness, _ cairn.Snapshotter) {
	const id = "shared-id"
	a, b := twoNamespaces(t, h, id)
	for _, s := range []cairn.Store{a, b} {
		mustAppend(t, s, id, 0, UserTurn(0, "r", "shared")...)
	}
	onlyA := newSession(t, a, nil)
	inA := cairn.Snapshot{Seq: 4, Data: snapData("in a")}
	mustPutSnapshot(t, as[cairn.Snapshotter](t, a), id, inA)
	wantSnapshot(t, as[cairn.Snapshotter](t, b), id, nil, "in namespace b after a Put in a")
	inB := cairn.Snapshot{Seq: 2, Data: snapData("in b")}
	mustPutSnapshot(t, as[cairn.Snapshotter](t, b), id, inB)
	wantSnapshot(t, as[cairn.Snapshotter](t, a), id, &inA, "in namespace a after an older Put in b")
	wantSnapshot(t, as[cairn.Snapshotter](t, b), id, &inB, "in namespace b")
	if err := as[cairn.Snapshotter](t, b).DropSnapshot(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	wantSnapshot(t, as[cairn.Snapshotter](t, a), id, &inA, "in namespace a after a drop in b")
	wantSnapshotNotFound(t, b, onlyA, "a session of another namespace")
	if err := b.Delete(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	wantSnapshot(t, as[cairn.Snapshotter](t, a), id, &inA, "in namespace a after a Delete in b")
}

// testSnapshotConcurrent: writers racing to put snapshots of different
// seqs leave the highest, whatever order they land in.
func testSnapshotConcurrent(t *testing.T, h *harness, sn cairn.Snapshotter) {
	const writers, rounds = 8, 4
	s := sn.(cairn.Store)
	id := newSession(t, s, nil)
	mustAppend(t, s, id, 0, Conversation(0, "r1", "raced")...)
	for round := range rounds {
		base := int64(round * writers)
		order := rand.Perm(writers)
		_, errs := Race(writers, nil, func(i int) (struct{}, error) {
			seq := base + int64(order[i]) + 1
			return struct{}{}, sn.PutSnapshot(t.Context(), id, cairn.Snapshot{Seq: seq, Data: snapData(fmt.Sprint("seq ", seq))})
		})
		if len(errs) > 0 {
			t.Fatalf("round %d: PutSnapshot failed: %v", round, errs)
		}
		top := base + writers
		wantSnapshot(t, sn, id, &cairn.Snapshot{Seq: top, Data: snapData(fmt.Sprint("seq ", top))}, fmt.Sprintf("after round %d of racing Puts", round))
	}
}

// testSnapshotRestore: cairn.Restore on the store uses a snapshot that
// matches the events, and folds every event when the snapshot is stale
// (of another history, or past the last event) or damaged, whose state is
// then byte for byte the fold of every event.
func testSnapshotRestore(t *testing.T, h *harness, sn cairn.Snapshotter) {
	s := sn.(cairn.Store)
	evs := Conversation(0, "run-1", "What is 2*(3+4)?")
	evs = append(evs, UserTurn(int64(len(evs)), "run-2", "and again")...)
	evs = append(evs, Conversation(int64(len(evs)), "run-3", "once more")...)
	full, err := cairn.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := full.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	encode := func(history []cairn.Event, k int) cairn.Snapshot {
		t.Helper()
		st, err := cairn.Fold(history[:k])
		if err != nil {
			t.Fatal(err)
		}
		snap, err := st.Encode(history[k-1])
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	restore := func(id string, base int64) *cairn.Restored {
		t.Helper()
		r, err := cairn.Restore(t.Context(), s, id)
		if err != nil {
			t.Fatalf("Restore(%s): %v", id, err)
		}
		if got, err := r.State.Snapshot(); err != nil || !bytes.Equal(got, want) {
			t.Errorf("Restore(%s): state\n got %s\nwant %s (%v)", id, got, want, err)
		}
		if r.Base != base || int64(len(r.Events)) != int64(len(evs))-base || r.Info.LastSeq != int64(len(evs)) {
			t.Errorf("Restore(%s): base %d with %d events, last seq %d; want base %d with %d, last seq %d",
				id, r.Base, len(r.Events), r.Info.LastSeq, base, int64(len(evs))-base, len(evs))
		}
		if len(r.Events) > 0 && r.Events[0].Seq != base+1 {
			t.Errorf("Restore(%s): first event seq %d, want %d", id, r.Events[0].Seq, base+1)
		}
		return r
	}
	session := func(snap *cairn.Snapshot) string {
		t.Helper()
		id := newSession(t, s, nil)
		mustAppend(t, s, id, 0, evs...)
		if snap != nil {
			mustPutSnapshot(t, sn, id, *snap)
		}
		return id
	}

	if r := restore(session(nil), 0); r.Ignored != nil {
		t.Errorf("Restore without a snapshot: ignored %v", r.Ignored)
	}
	for _, k := range []int{20, len(evs)} {
		snap := encode(evs, k)
		if r := restore(session(&snap), int64(k)); r.Ignored != nil {
			t.Errorf("Restore with a good snapshot at seq %d: ignored %v", k, r.Ignored)
		}
	}

	other := Conversation(0, "run-9", "What is 2*(3+5)?") // another history: a run the session never had
	longer := append(slices.Clone(evs), UserTurn(int64(len(evs)), "run-x", "more")...)
	damaged := encode(evs, 20)
	damaged.Data = bytes.Replace(damaged.Data, []byte(`"steps":`), []byte(`"steps":9`), 1)
	for name, snap := range map[string]cairn.Snapshot{
		"of another history":   encode(other, 10),
		"past the last event":  encode(longer, len(longer)),
		"damaged":              damaged,
		"cut short":            {Seq: 20, Data: encode(evs, 20).Data[:100]},
		"filed at another seq": {Seq: 21, Data: encode(evs, 20).Data},
	} {
		r := restore(session(&snap), 0)
		if !errors.Is(r.Ignored, cairn.ErrSnapshotInvalid) {
			t.Errorf("Restore with a snapshot %s: ignored %v, want ErrSnapshotInvalid", name, r.Ignored)
		}
	}

	gone := session(nil)
	if err := s.Delete(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	if _, err := cairn.Restore(t.Context(), s, gone); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Restore of a deleted session: got %v, want ErrNotFound", err)
	}
}
