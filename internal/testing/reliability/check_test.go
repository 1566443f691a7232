package reliability

import (
	"errors"
	"testing"

	"github.com/cairnhq/cairn"
)

// statusOf returns the stored status of a session, or "" when the store
// does not hold it.
func statusOf(t *testing.T, st cairn.Store, id string) (cairn.Status, string) {
	t.Helper()
	rec, err := st.Load(t.Context(), id, 0)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		return "", "no session"
	case err != nil:
		t.Fatalf("load %s: %v", id, err)
	case len(rec.Events) == 0:
		return cairn.StatusNew, "no event"
	}
	mem, err := cairn.NewMemory(rec.Events...)
	if err != nil {
		t.Fatalf("session %s: %v", id, err)
	}
	state, err := mem.State()
	if err != nil {
		t.Fatalf("session %s: fold: %v", id, err)
	}
	return state.Status, string(rec.Events[len(rec.Events)-1].Kind)
}
