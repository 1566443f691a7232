package eino_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	eino "github.com/cairnhq/cairn/contrib/eino"
)

// TestCheckPointStore checks Get and Set, the history, Fork and Delete on
// each backend.
func TestCheckPointStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := open(t, b.url(t))
			ctx := t.Context()
			cps := eino.NewCheckPointStore(st, "")
			id, fork := newID("cp"), newID("cp-fork")
			cleanup(t, st, id, fork)

			if _, ok, err := cps.Get(ctx, id); err != nil || ok {
				t.Fatalf("Get of a checkpoint never set = %v, %v; want not found, no error", ok, err)
			}
			for i := 1; i <= 3; i++ {
				if err := cps.Set(ctx, id, []byte(fmt.Sprintf("checkpoint %d", i))); err != nil {
					t.Fatalf("Set %d: %v", i, err)
				}
				got, ok, err := cps.Get(ctx, id)
				if err != nil || !ok || string(got) != fmt.Sprintf("checkpoint %d", i) {
					t.Fatalf("Get after Set %d = %q, %v, %v", i, got, ok, err)
				}
			}
			h, err := cps.History(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) != 3 || string(h[0].Data) != "checkpoint 1" || h[0].Seq >= h[2].Seq {
				t.Fatalf("History = %+v, want the 3 checkpoints oldest first", h)
			}
			info, err := st.Stat(ctx, id)
			if err != nil || info.Labels[eino.LabelCheckpoint] != "true" {
				t.Fatalf("the checkpoint's session: %+v, %v; want the label %s", info, err, eino.LabelCheckpoint)
			}

			// Time travel: the first checkpoint becomes the latest of another ID.
			if err := cps.Fork(ctx, id, h[0].Seq, fork); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := cps.Get(ctx, fork); err != nil || !ok || string(got) != "checkpoint 1" {
				t.Fatalf("Get of the fork = %q, %v, %v; want checkpoint 1", got, ok, err)
			}
			if got, _, _ := cps.Get(ctx, id); string(got) != "checkpoint 3" {
				t.Fatalf("the fork changed the original: %q", got)
			}
			if err := cps.Fork(ctx, id, 999, fork); err == nil {
				t.Fatal("Fork at a seq that holds no checkpoint succeeded")
			}

			// Binary data, any size, comes back byte for byte.
			bin := bytes.Repeat([]byte{0, 1, 2, 255, '"', '\\'}, 10000)
			if err := cps.Set(ctx, id, bin); err != nil {
				t.Fatal(err)
			}
			if got, _, err := cps.Get(ctx, id); err != nil || !bytes.Equal(got, bin) {
				t.Fatalf("Get of binary data: %d bytes, %v; want %d bytes back", len(got), err, len(bin))
			}

			// Writers at once: every Set is kept, none lost.
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i := range 8 {
				wg.Go(func() {
					if err := cps.Set(ctx, fork, []byte(fmt.Sprintf("parallel %d", i))); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("a parallel Set: %v", err)
			}
			if h, err := cps.History(ctx, fork); err != nil || len(h) != 9 {
				t.Errorf("the fork's history after 8 parallel Sets: %d checkpoints, %v; want 9", len(h), err)
			}

			if err := cps.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := cps.Get(ctx, id); err != nil || ok {
				t.Fatalf("Get after Delete = %v, %v; want not found", ok, err)
			}
			if err := cps.Delete(ctx, id); !errors.Is(err, cairn.ErrNotFound) {
				t.Fatalf("Delete twice = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestCheckPointStore_BadID checks that an ID that cannot name a session is
// refused with an error naming it.
func TestCheckPointStore_BadID(t *testing.T) {
	st := open(t, "memory:")
	cps := eino.NewCheckPointStore(st, "")
	err := cps.Set(t.Context(), "a/b", []byte("x"))
	if err == nil || !errors.Is(err, cairn.ErrInvalidID) || !bytes.Contains([]byte(err.Error()), []byte(`"a/b"`)) {
		t.Fatalf("Set with ID a/b = %v; want an error wrapping ErrInvalidID that names it", err)
	}
	if _, _, err := cps.Get(t.Context(), ""); !errors.Is(err, cairn.ErrInvalidID) {
		t.Fatalf("Get with an empty ID = %v; want ErrInvalidID", err)
	}
}
