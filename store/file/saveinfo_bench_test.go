//go:build linux || darwin

package file

import (
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// BenchmarkSaveInfo measures what an append writes once its lines are
// durable: its session's info.json and ack.json, each in place, without
// an fsync. The fdatasync that BenchmarkAppend waits for is not in it,
// so that the cost of these records shows through.
func BenchmarkSaveInfo(b *testing.B) {
	s, err := Open(b.Context(), b.TempDir(), cairn.StoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const id = "bench"
	if err := s.Create(b.Context(), cairn.SessionMeta{ID: id}); err != nil {
		b.Fatal(err)
	}
	if err := s.Append(b.Context(), id, 0, storetest.Conversation(0, "r", "a question")...); err != nil {
		b.Fatal(err)
	}
	ss := s.acquire(id)
	defer s.release(id, ss)
	if err := s.lock(b.Context(), ss, id, true); err != nil {
		b.Fatal(err)
	}
	defer ss.unlock()
	for b.Loop() {
		ss.info.Steps++
		if err := s.saveInfo(ss, id, false); err != nil {
			b.Fatal(err)
		}
	}
}
