package cairn_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/storetest"
)

// snapStore adds a snapshot map to a memory store, for testing Restore
// apart from the backends (the conformance suite tests those).
type snapStore struct {
	cairn.Store
	mu    sync.Mutex
	snaps map[string]cairn.Snapshot
	err   error // returned by LoadSnapshot when set
}

func (s *snapStore) PutSnapshot(_ context.Context, id string, snap cairn.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.snaps[id]; !ok || old.Seq <= snap.Seq {
		s.snaps[id] = cairn.Snapshot{Seq: snap.Seq, Data: bytes.Clone(snap.Data)}
	}
	return nil
}

func (s *snapStore) LoadSnapshot(ctx context.Context, id string) (*cairn.Snapshot, error) {
	if _, err := s.Store.Load(ctx, id, 1<<62); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	snap, ok := s.snaps[id]
	if !ok {
		return nil, nil
	}
	return &snap, nil
}

func (s *snapStore) DropSnapshot(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.snaps, id)
	return nil
}

func newSnapStore(t *testing.T) *snapStore {
	t.Helper()
	st, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &snapStore{Store: st, snaps: map[string]cairn.Snapshot{}}
}

func history() []cairn.Event {
	evs := storetest.Conversation(0, "run-1", "What is 2*(3+4)?")
	evs = append(evs, storetest.UserTurn(int64(len(evs)), "run-2", "and again")...)
	return append(evs, storetest.Conversation(int64(len(evs)), "run-3", "once more")...)
}

// TestSnapshot_FoldsAsTheEvents checks that a snapshot taken after any
// event, then the events after it, fold to the state of every event, byte
// for byte.
func TestSnapshot_FoldsAsTheEvents(t *testing.T) {
	evs := history()
	full, err := cairn.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := full.Snapshot()
	for k := 1; k <= len(evs); k++ {
		st, err := cairn.Fold(evs[:k])
		if err != nil {
			t.Fatal(err)
		}
		snap, err := st.Encode(evs[k-1])
		if err != nil {
			t.Fatalf("after seq %d: %v", k, err)
		}
		got, err := cairn.DecodeSnapshot(snap, evs[k-1])
		if err != nil {
			t.Fatalf("after seq %d: %v", k, err)
		}
		for _, e := range evs[k:] {
			if err := got.Apply(e); err != nil {
				t.Fatalf("after seq %d: %v", k, err)
			}
		}
		if b, _ := got.Snapshot(); !bytes.Equal(b, want) {
			t.Fatalf("snapshot after seq %d, then the rest:\n got %s\nwant %s", k, b, want)
		}
	}
}

func TestEncodeSnapshot_WrongEvent(t *testing.T) {
	evs := history()
	st, _ := cairn.Fold(evs[:5])
	if _, err := st.Encode(evs[3]); err == nil || !strings.Contains(err.Error(), "seq 4") {
		t.Fatalf("err = %v, want one naming seq 4", err)
	}
	if _, err := cairn.NewState().Encode(evs[0]); err == nil {
		t.Fatal("the state of no event encoded")
	}
}

func TestRestore(t *testing.T) {
	ctx := context.Background()
	evs := history()
	full, _ := cairn.Fold(evs)
	want, _ := full.Snapshot()
	setup := func(t *testing.T) *snapStore {
		s := newSnapStore(t)
		if err := s.Create(ctx, cairn.SessionMeta{ID: "s1"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "s1", 0, evs...); err != nil {
			t.Fatal(err)
		}
		return s
	}
	snapAt := func(t *testing.T, k int) cairn.Snapshot {
		st, _ := cairn.Fold(evs[:k])
		snap, err := st.Encode(evs[k-1])
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	check := func(t *testing.T, r *cairn.Restored, base int64) {
		t.Helper()
		if b, _ := r.State.Snapshot(); !bytes.Equal(b, want) {
			t.Errorf("state:\n got %s\nwant %s", b, want)
		}
		if r.Base != base || int64(len(r.Events)) != int64(len(evs))-base {
			t.Errorf("base %d with %d events, want base %d with %d", r.Base, len(r.Events), base, int64(len(evs))-base)
		}
		if len(r.Events) > 0 && r.Events[0].Seq != base+1 {
			t.Errorf("first event seq %d, want %d", r.Events[0].Seq, base+1)
		}
		if r.Info.LastSeq != int64(len(evs)) {
			t.Errorf("info last seq %d", r.Info.LastSeq)
		}
	}

	// restore restores s1 from s and checks it against the events, read
	// from base on.
	restore := func(t *testing.T, s *snapStore, base int64) *cairn.Restored {
		t.Helper()
		r, err := cairn.Restore(ctx, s, "s1")
		if err != nil {
			t.Fatal(err)
		}
		check(t, r, base)
		return r
	}

	for _, tc := range []struct {
		name string
		at   int // the snapshot's seq; 0 for none
	}{{"no snapshot", 0}, {"used", 20}, {"at the last event", len(evs)}} {
		t.Run(tc.name, func(t *testing.T) {
			s := setup(t)
			if tc.at > 0 {
				s.PutSnapshot(ctx, "s1", snapAt(t, tc.at))
			}
			if r := restore(t, s, int64(tc.at)); r.Ignored != nil {
				t.Errorf("ignored: %v", r.Ignored)
			}
		})
	}
	bad := map[string]func(t *testing.T, s *snapStore){
		"damaged bytes": func(t *testing.T, s *snapStore) {
			snap := snapAt(t, 20)
			snap.Data = bytes.Replace(snap.Data, []byte(`"steps":`), []byte(`"steps":9`), 1)
			s.PutSnapshot(ctx, "s1", snap)
		},
		"truncated": func(t *testing.T, s *snapStore) {
			snap := snapAt(t, 20)
			snap.Data = snap.Data[:len(snap.Data)/2]
			s.PutSnapshot(ctx, "s1", snap)
		},
		"filed at another seq": func(t *testing.T, s *snapStore) {
			snap := snapAt(t, 20)
			snap.Seq = 21
			s.PutSnapshot(ctx, "s1", snap)
		},
		"beyond the history": func(t *testing.T, s *snapStore) {
			longer := append(append([]cairn.Event{}, evs...), storetest.UserTurn(int64(len(evs)), "run-x", "more")...)
			st, _ := cairn.Fold(longer)
			snap, _ := st.Encode(longer[len(longer)-1])
			s.PutSnapshot(ctx, "s1", snap)
		},
		"of another history": func(t *testing.T, s *snapStore) {
			other := storetest.Conversation(0, "run-9", "What is 2*(3+5)?") // another run, as a recreated session has
			st, _ := cairn.Fold(other[:10])
			snap, _ := st.Encode(other[9])
			s.PutSnapshot(ctx, "s1", snap)
		},
		"sealed": func(t *testing.T, s *snapStore) {
			s.PutSnapshot(ctx, "s1", cairn.Snapshot{Seq: 20, Data: []byte("cairn-sealed:v1:k1:AAAA")})
		},
		"unreadable": func(t *testing.T, s *snapStore) {
			s.PutSnapshot(ctx, "s1", snapAt(t, 20))
			s.err = errors.New("connection reset")
		},
	}
	for name, spoil := range bad {
		t.Run(name, func(t *testing.T) {
			s := setup(t)
			spoil(t, s)
			r := restore(t, s, 0)
			if r.Ignored == nil {
				t.Fatal("the snapshot was not reported as ignored")
			}
			if name != "unreadable" && !errors.Is(r.Ignored, cairn.ErrSnapshotInvalid) {
				t.Errorf("ignored %v, want ErrSnapshotInvalid", r.Ignored)
			}
			t.Logf("ignored: %v", r.Ignored)
		})
	}
	t.Run("missing session", func(t *testing.T) {
		s := newSnapStore(t)
		if _, err := cairn.Restore(ctx, s, "nope"); !errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
}
