package storetest

import (
	"errors"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// testDeletedEvent deletes events from stored histories behind the
// store's back, through the backend's DeleteEvent hook, as a person or a
// program with access to the storage would: one from the middle of a
// history, and the last of another. Load of each, by the store that wrote
// it and by one opened after, is a *driver.DamagedError naming the
// session: never a shorter history, a plain error, or an outage. The
// other session loads as before. (Whether List and Append see it too
// differs between backends; docs/RELIABILITY.md says what each does.)
func testDeletedEvent(t *testing.T, h *harness) {
	s := h.store(t)
	ids := map[string]int64{} // session: the seq deleted from it, 0 for none
	for _, gap := range []int64{5, 12, 0} {
		id := newSession(t, s, nil)
		for seq := int64(1); seq <= 12; seq += 6 {
			evs := make([]cairn.Event, 6)
			for i := range evs {
				evs[i] = Custom(seq+int64(i), "an event")
			}
			mustAppend(t, s, id, seq-1, evs...)
		}
		ids[id] = gap
	}
	for id, gap := range ids {
		if gap > 0 {
			h.abilities.DeleteEvent(t, s, id, gap)
		}
	}
	for i, st := range []cairn.Store{s, h.store(t)} {
		for id, gap := range ids {
			rec, err := st.Load(t.Context(), id, 0)
			if gap == 0 {
				if err != nil || len(rec.Events) != 12 {
					t.Errorf("store %d: Load of the untouched session: %v, want its 12 events", i+1, err)
				}
				continue
			}
			d, ok := errors.AsType[*driver.DamagedError](err)
			if !ok || d.Session != id || cairn.IsUnavailable(err) {
				t.Errorf("store %d: Load with the event of seq %d deleted = %v, want a *driver.DamagedError for %s", i+1, gap, err, id)
				if err == nil {
					t.Errorf("store %d: Load returned %d events, to last seq %d", i+1, len(rec.Events), rec.Info.LastSeq)
				}
			}
		}
	}
}
