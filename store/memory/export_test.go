package memory

import (
	"slices"
	"testing"

	"github.com/cairnhq/cairn"
)

// Envelopes returns the envelopes the store keeps of session id, for the
// conformance suite's Envelopes test.
func Envelopes(t *testing.T, st cairn.Store, id string) [][]byte {
	t.Helper()
	s := st.(*Store)
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	ss := s.live(id)
	if ss == nil {
		t.Fatalf("session %s not found", id)
	}
	return slices.Clone(ss.events)
}
