package agent_test

import (
	"errors"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/store/crypt"
)

// TestAgent_ResumeSealedSnapshot: an encrypted session whose snapshot is
// at its last event has no event after the snapshot to be found sealed. A
// program without the key must refuse it all the same, whether it reads
// the inner store directly or through a guard (store/crypt without a
// keyring): nothing reaches a model, nothing is appended in plaintext.
func TestAgent_ResumeSealedSnapshot(t *testing.T) {
	ctx := t.Context()
	inner := testcheck.MemoryStore(t)
	enc := testcheck.Sealed(t, inner, 7)
	s, err := offlineAgent(enc).Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(ctx, "remember that the vault code is 4711"); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	rec, err := enc.Load(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	state, err := cairn.Fold(rec.Events)
	if err != nil {
		t.Fatal(err)
	}
	last := rec.Events[len(rec.Events)-1]
	snap, err := state.Encode(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.(cairn.Snapshotter).PutSnapshot(ctx, id, snap); err != nil {
		t.Fatal(err)
	}
	// With the key the session opens from the snapshot, with no event
	// after it.
	r, err := cairn.Restore(ctx, enc, id)
	if err != nil || r.Base != last.Seq || len(r.Events) != 0 || r.Ignored != nil {
		t.Fatalf("Restore with the key: %+v, %v; want the snapshot at seq %d and no event after it", r, err, last.Seq)
	}

	guard, err := crypt.Wrap(inner, crypt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]cairn.Store{"the inner store": inner, "a guard": guard} {
		a := offlineAgent(st)
		if _, err := a.Resume(ctx, id); !errors.Is(err, cairn.ErrSealed) {
			t.Errorf("Resume through %s without the key: %v, want an error wrapping cairn.ErrSealed", name, err)
		}
		if _, err := a.Open(ctx, id); !errors.Is(err, cairn.ErrSealed) {
			t.Errorf("Open through %s without the key: %v, want an error wrapping cairn.ErrSealed", name, err)
		}
	}
	if n := len(loadEvents(t, inner, id)); n != len(rec.Events) {
		t.Errorf("%d events stored, want the %d sealed ones only", n, len(rec.Events))
	}
	for _, e := range loadEvents(t, inner, id) {
		if !crypt.IsSealed(e) && e.Kind != cairn.KindMemoryReset {
			t.Errorf("event %d (%s) is stored in plaintext: %s", e.Seq, e.Kind, e.Data)
		}
	}
}
