package crypt_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
)

// TestStore_Snapshot: a snapshot is sealed like the events: the inner
// store never holds its text; it comes back whole through the key; and
// one that does not open (moved, refiled, in clear, of an earlier
// session) is never used: cairn.Restore folds the events instead. Without
// the key, a plain store's Restore ignores it and a guard refuses it.
func TestStore_Snapshot(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ring := crypttest.NewKeyring(t)
			s := open(t, ring)
			marker := crypttest.Marker()
			evs := write(t, s, "a", marker)
			write(t, s, "b", crypttest.Marker())
			st, err := cairn.Fold(evs)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := st.Snapshot()
			snap, err := st.Encode(evs[len(evs)-1])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(snap.Data, []byte(marker)) {
				t.Fatal("the snapshot does not hold the marker: the test cannot see it sealed")
			}
			sn := s.(cairn.Snapshotter)
			inner := s.Inner().(cairn.Snapshotter)
			if err := sn.PutSnapshot(t.Context(), "a", snap); err != nil {
				t.Fatal(err)
			}
			got, err := sn.LoadSnapshot(t.Context(), "a")
			if err != nil || got == nil || got.Seq != snap.Seq || !bytes.Equal(got.Data, snap.Data) {
				t.Fatalf("LoadSnapshot through the key = %v, %v; want the snapshot put", got, err)
			}
			stored, err := inner.LoadSnapshot(t.Context(), "a")
			if err != nil || stored == nil {
				t.Fatalf("inner LoadSnapshot: %v, %v", stored, err)
			}
			if bytes.Contains(stored.Data, []byte(marker)) || !bytes.HasPrefix(stored.Data, []byte(crypt.TokenPrefix)) {
				t.Errorf("the inner store holds the snapshot unsealed: %.80s…", stored.Data)
			}
			r, err := cairn.Restore(t.Context(), s, "a")
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := r.State.Snapshot(); r.Base != snap.Seq || r.Ignored != nil || !bytes.Equal(b, want) {
				t.Errorf("Restore through the key: base %d, ignored %v, state equal %v; want base %d, none ignored, equal",
					r.Base, r.Ignored, bytes.Equal(b, want), snap.Seq)
			}

			// Without the key: a plain store's Restore cannot use the
			// sealed bytes, and a guard refuses them.
			r, err = cairn.Restore(t.Context(), s.Inner(), "a")
			if err != nil {
				t.Fatalf("Restore through the plain inner store: %v", err)
			}
			if r.Base != 0 || !errors.Is(r.Ignored, cairn.ErrSnapshotInvalid) {
				t.Errorf("Restore through the plain inner store: base %d, ignored %v; want base 0, ErrSnapshotInvalid", r.Base, r.Ignored)
			}
			guard, err := crypt.Wrap(s.Inner(), crypt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := guard.(cairn.Snapshotter).LoadSnapshot(t.Context(), "a"); !errors.Is(err, cairn.ErrSealed) {
				t.Errorf("guard LoadSnapshot: got %v, want ErrSealed", err)
			}
			if _, err := cairn.Restore(t.Context(), guard, "a"); !errors.Is(err, cairn.ErrSealed) {
				t.Errorf("guard Restore: got %v, want ErrSealed", err)
			}
			for _, seq := range []int64{1, 13, 100} {
				err := guard.(cairn.Snapshotter).PutSnapshot(t.Context(), "a", cairn.Snapshot{Seq: seq, Data: snap.Data})
				if !errors.Is(err, cairn.ErrSealed) {
					t.Errorf("guard PutSnapshot at seq %d to a sealed session: got %v, want ErrSealed", seq, err)
				}
			}
			// A guard keeps snapshots of sessions in clear as they are.
			plainEvs := crypttest.Events("in clear")
			if err := guard.Create(t.Context(), cairn.SessionMeta{ID: "clear"}); err != nil {
				t.Fatal(err)
			}
			if err := guard.Append(t.Context(), "clear", 0, plainEvs...); err != nil {
				t.Fatal(err)
			}
			clear := cairn.Snapshot{Seq: 13, Data: []byte("a snapshot in clear")}
			if err := guard.(cairn.Snapshotter).PutSnapshot(t.Context(), "clear", clear); err != nil {
				t.Fatalf("guard PutSnapshot to a session in clear: %v", err)
			}
			if got, err := guard.(cairn.Snapshotter).LoadSnapshot(t.Context(), "clear"); err != nil || got == nil || !bytes.Equal(got.Data, clear.Data) {
				t.Errorf("guard LoadSnapshot of a session in clear = %v, %v", got, err)
			}

			// Snapshots that do not open, put underneath: each is refused
			// with the reason, and Restore folds the events.
			bSnap, err := inner.LoadSnapshot(t.Context(), "a")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name string
				id   string
				snap cairn.Snapshot
				want error
			}{
				{"filed at another seq", "a", cairn.Snapshot{Seq: 14, Data: stored.Data}, crypt.ErrTampered},
				{"in clear", "a", cairn.Snapshot{Seq: 15, Data: snap.Data}, crypt.ErrPlaintext},
				{"moved from another session", "b", *bSnap, crypt.ErrTampered},
			} {
				if err := inner.PutSnapshot(t.Context(), c.id, c.snap); err != nil {
					t.Fatal(err)
				}
				_, err := sn.LoadSnapshot(t.Context(), c.id)
				if !errors.Is(err, c.want) || !errors.Is(err, cairn.ErrSnapshotInvalid) {
					t.Errorf("LoadSnapshot of a snapshot %s: got %v, want %v and ErrSnapshotInvalid", c.name, err, c.want)
				}
				r, err := cairn.Restore(t.Context(), s, c.id)
				if err != nil {
					t.Fatalf("Restore with a snapshot %s: %v", c.name, err)
				}
				if r.Base != 0 || !errors.Is(r.Ignored, cairn.ErrSnapshotInvalid) {
					t.Errorf("Restore with a snapshot %s: base %d, ignored %v", c.name, r.Base, r.Ignored)
				}
			}

			// A session created again has a new data key: its earlier
			// self's sealed snapshot, put back underneath, does not open.
			if err := s.Delete(t.Context(), "a"); err != nil {
				t.Fatal(err)
			}
			if err := sn.PutSnapshot(t.Context(), "a", snap); !errors.Is(err, cairn.ErrNotFound) {
				t.Errorf("PutSnapshot after Delete: got %v, want ErrNotFound", err)
			}
			write(t, s, "a", marker)
			if err := inner.PutSnapshot(t.Context(), "a", *stored); err != nil {
				t.Fatal(err)
			}
			if _, err := sn.LoadSnapshot(t.Context(), "a"); !errors.Is(err, crypt.ErrTampered) {
				t.Errorf("LoadSnapshot of an earlier session's snapshot: got %v, want ErrTampered", err)
			}
			if r, err := cairn.Restore(t.Context(), s, "a"); err != nil || r.Base != 0 {
				t.Errorf("Restore with an earlier session's snapshot: %v, base %d", err, r.Base)
			}
			if !strings.HasPrefix(string(stored.Data), crypt.TokenPrefix) {
				t.Errorf("a sealed snapshot is not a token: %.40s", stored.Data)
			}
		})
	}
}
