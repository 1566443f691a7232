package redis_test

import (
	"errors"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_AppendRetried checks that an append sent again after it went
// through (go-redis resends a command whose reply was lost on the network)
// succeeds, while one that differs in any event is still a conflict.
func TestStore_AppendRetried(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{})
	ctx := t.Context()
	if err := s.Create(ctx, cairn.SessionMeta{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	first := []cairn.Event{storetest.Custom(1, "a")}
	if err := s.Append(ctx, "r", 0, first...); err != nil {
		t.Fatal(err)
	}
	batch := []cairn.Event{storetest.Custom(2, "b"), storetest.Custom(3, "c")}
	for i := range 2 {
		if err := s.Append(ctx, "r", 1, batch...); err != nil {
			t.Fatalf("append %d of the same events: %v", i+1, err)
		}
	}
	for name, other := range map[string][]cairn.Event{
		"other events":   {storetest.Custom(2, "b"), storetest.Custom(3, "x")},
		"fewer events":   {storetest.Custom(2, "b")},
		"an earlier seq": first,
	} {
		expect := other[0].Seq - 1
		if err := s.Append(ctx, "r", expect, other...); !errors.Is(err, cairn.ErrConflict) {
			t.Errorf("append of %s at %d: got %v, want ErrConflict", name, expect, err)
		}
	}
	rec, err := s.Load(ctx, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != 3 {
		t.Errorf("the store holds %d events; want 3, each once", len(rec.Events))
	}
}
