package server

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
)

// TestLoaded_StateAt checks the kept states against a fold from scratch:
// any seq, in any order, as the session grows.
func TestLoaded_StateAt(t *testing.T) {
	st := testcheck.MemoryStore(t)
	h := newHarness(t, st, Config{})
	events := chatEvents(3700)
	writeSession(t, st, "s", events[:2600])
	check := func(n int) {
		t.Helper()
		rec, err := h.srv.loadAll(t.Context(), "s")
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Events) != n {
			t.Fatalf("loadAll: %d events, want %d", len(rec.Events), n)
		}
		seqs := []int64{0, 1, 999, 1000, 1001, int64(n), int64(n) - 1, 2000, 1500}
		for range 20 {
			seqs = append(seqs, rand.Int64N(int64(n)+1))
		}
		// What a fold from scratch gives, at each seq, in one pass.
		want := map[int64][]byte{}
		sorted := slices.Sorted(slices.Values(seqs))
		fold := cairn.NewState()
		for _, at := range sorted {
			for fold.LastSeq < at && at <= int64(n) {
				if err := fold.Apply(events[fold.LastSeq]); err != nil {
					t.Fatal(err)
				}
			}
			want[at], _ = fold.Snapshot()
		}
		for _, at := range seqs { // in random order
			if at > int64(n) {
				continue
			}
			got, err := rec.stateAt(at)
			if err != nil {
				t.Fatal(err)
			}
			if snap, _ := got.Snapshot(); !bytes.Equal(snap, want[at]) {
				t.Fatalf("state at %d differs from a fold from scratch", at)
			}
			got.Variables["changed"] = []byte(`1`) // the caller's own copy
		}
	}
	check(2600)
	for i := 2600; i < 3700; i += 550 {
		if err := st.Append(t.Context(), "s", int64(i), events[i:i+550]...); err != nil {
			t.Fatal(err)
		}
	}
	check(3700)
	// Deleted and made again under the same ID: read anew.
	if err := st.Delete(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	writeSession(t, st, "s", events[:10])
	check(10)
}

func TestTimeline_Rows(t *testing.T) {
	events := chatEvents(30)
	tl := newTimeline()
	rows := tl.rows(events)
	if rows[0].RunStarted == nil || rows[0].RunNumber != 1 || rows[7].RunNumber != 2 {
		t.Errorf("runs: %+v / %+v", rows[0], rows[7])
	}
	model, result, set := rows[2], rows[3], rows[4]
	if model.Step != 1 || result.Step != 1 || set.Step != 1 || rows[5].Step != 2 {
		t.Errorf("steps: model %d, result %d, state %d, answer %d; want 1, 1, 1, 2", model.Step, result.Step, set.Step, rows[5].Step)
	}
	if result.Call == nil || string(result.Call.Args) != `{"expression":"0*7"}` || !result.Idempotent {
		t.Errorf("the tool result does not know its call: %+v", result)
	}
	// A page that starts in the middle of a run knows the run's calls.
	tl = newTimeline()
	tl.skip(events[:10])
	page := tl.rows(events[10:])
	if page[0].Seq != 11 || page[0].Call == nil || page[0].Step != 1 || page[4].RunNumber != 3 {
		t.Errorf("a page from seq 11: %+v; run number %d", page[0], page[4].RunNumber)
	}
	// A run by another agent is flagged.
	other := cairn.MustEvent(cairn.KindRunStarted, "x", cairn.RunStarted{RunID: "x", Agent: "b", Model: "m2", Fingerprint: cairn.Fingerprint{Model: "m2"}})
	other.Seq = 31
	if r := tl.add(other); !strings.Contains(r.Warn, "model script → m2") {
		t.Errorf("the agent change: %q", r.Warn)
	}
}

func TestCompareState(t *testing.T) {
	events := chatEvents(12)
	a, _ := cairn.Fold(events[:4])
	b, _ := cairn.Fold(events[:12])
	d := compareState(a, b)
	if len(d.Vars) != 1 || d.Vars[0].Key != "last" || d.Vars[0].Change != "added" {
		t.Errorf("variables: %+v", d.Vars)
	}
	if len(d.Added) == 0 || d.Added[0].Seq != 6 {
		t.Errorf("messages added: %+v", d.Added)
	}
	changed := map[string]bool{}
	for _, f := range d.Fields {
		changed[f.Name] = f.Changed
	}
	if !changed["steps"] || !changed["last seq"] || changed["status"] {
		t.Errorf("fields: %+v", d.Fields)
	}
}
