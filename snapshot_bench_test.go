package cairn_test

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// snapshotEvents are the events of a state of about 128 KB, the one the
// snapshot benchmarks encode, decode and fold.
func snapshotEvents() []cairn.Event {
	var evs []cairn.Event
	for len(evs) < 240 {
		evs = append(evs, storetest.UserTurn(int64(len(evs)), "run-1", strings.Repeat("lorem ipsum ", 85))...)
	}
	return evs
}

// BenchmarkDecodeSnapshot decodes and checks the snapshot of a state of
// about 128 KB: what opening a compacted long session reads.
func BenchmarkDecodeSnapshot(b *testing.B) {
	evs := snapshotEvents()
	st, err := cairn.Fold(evs)
	if err != nil {
		b.Fatal(err)
	}
	snap, err := st.Encode(evs[len(evs)-1])
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(snap.Data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cairn.DecodeSnapshot(snap, evs[len(evs)-1]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFold folds the events of the same state, for comparison.
func BenchmarkFoldSnapshotEvents(b *testing.B) {
	evs := snapshotEvents()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cairn.Fold(evs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeSnapshot encodes the snapshot of a state of about
// 128 KB: what the agent writes in the background.
func BenchmarkEncodeSnapshot(b *testing.B) {
	evs := snapshotEvents()
	st, err := cairn.Fold(evs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Encode(evs[len(evs)-1]); err != nil {
			b.Fatal(err)
		}
	}
}
