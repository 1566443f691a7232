package cairn_test

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// BenchmarkDecodeSnapshot decodes and checks the snapshot of a state of
// about 128 KB: what opening a compacted long session reads.
func BenchmarkDecodeSnapshot(b *testing.B) {
	var evs []cairn.Event
	for len(evs) < 240 {
		evs = append(evs, storetest.UserTurn(int64(len(evs)), "run-1", strings.Repeat("lorem ipsum ", 85))...)
	}
	st, err := cairn.Fold(evs)
	if err != nil {
		b.Fatal(err)
	}
	snap, err := cairn.EncodeSnapshot(st, evs[len(evs)-1])
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
	var evs []cairn.Event
	for len(evs) < 240 {
		evs = append(evs, storetest.UserTurn(int64(len(evs)), "run-1", strings.Repeat("lorem ipsum ", 85))...)
	}
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
	var evs []cairn.Event
	for len(evs) < 240 {
		evs = append(evs, storetest.UserTurn(int64(len(evs)), "run-1", strings.Repeat("lorem ipsum ", 85))...)
	}
	st, err := cairn.Fold(evs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cairn.EncodeSnapshot(st, evs[len(evs)-1]); err != nil {
			b.Fatal(err)
		}
	}
}
