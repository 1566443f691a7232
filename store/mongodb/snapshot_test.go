package mongodb_test

import (
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestSnapshot_TooLarge: a snapshot that cannot fit in a document is
// refused before anything is sent, and the one held stays.
func TestSnapshot_TooLarge(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	create(t, s, "a")
	appendOK(t, s, "a", 0, storetest.UserTurn(0, "r", "large")...)
	keep := cairn.Snapshot{Seq: 2, Data: []byte("kept")}
	if err := s.PutSnapshot(t.Context(), "a", keep); err != nil {
		t.Fatal(err)
	}
	err := s.PutSnapshot(t.Context(), "a", cairn.Snapshot{Seq: 4, Data: make([]byte, 16<<20)})
	if !errors.Is(err, cairn.ErrTooLarge) {
		t.Errorf("PutSnapshot of 16 MiB: got %v, want ErrTooLarge", err)
	}
	if got, err := s.LoadSnapshot(t.Context(), "a"); err != nil || got == nil || got.Seq != 2 || string(got.Data) != "kept" {
		t.Errorf("LoadSnapshot after a refused put = %v, %v; want the one kept", got, err)
	}
}

// TestSnapshot_Strays: snapshot documents that a put racing a Delete may
// leave (of an incarnation the session no longer has, or of a session
// gone) are never a session's snapshot, and Sweep removes them once they
// are older than StaleAfter; Delete removes a session's own.
func TestSnapshot_Strays(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	for _, id := range []string{"live", "deleted"} {
		create(t, s, id)
		appendOK(t, s, id, 0, storetest.UserTurn(0, "r", id)...)
	}
	own := cairn.Snapshot{Seq: 3, Data: []byte("the live session's")}
	if err := s.PutSnapshot(t.Context(), "live", own); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSnapshot(t.Context(), "deleted", own); err != nil {
		t.Fatal(err)
	}
	snaps := client(t).Collection(s.SnapshotCollection())
	old := bson.NewDateTimeFromTime(time.Now().Add(-2 * time.Hour))
	for _, d := range []bson.D{
		{{Key: "session", Value: "live"}, {Key: "seq", Value: 4}, {Key: "inc", Value: "an-earlier-one"}, {Key: "written_at", Value: old}, {Key: "data", Value: []byte("stray")}},
		{{Key: "session", Value: "nobody"}, {Key: "seq", Value: 4}, {Key: "inc", Value: "x"}, {Key: "written_at", Value: old}, {Key: "data", Value: []byte("stray")}},
	} {
		if _, err := snaps.InsertOne(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.LoadSnapshot(t.Context(), "live"); err != nil || got == nil || got.Seq != 3 {
		t.Errorf("LoadSnapshot beside a stray of a higher seq = %v, %v; want the session's own, seq 3", got, err)
	}
	if err := s.Delete(t.Context(), "deleted"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, snaps, bson.D{{Key: "session", Value: "deleted"}}); n != 0 {
		t.Errorf("%d snapshot documents of a deleted session, want 0", n)
	}
	if _, err := s.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := count(t, snaps, bson.D{{Key: "data", Value: []byte("stray")}}); n != 0 {
		t.Errorf("%d stray snapshot documents after Sweep, want 0", n)
	}
	if got, err := s.LoadSnapshot(t.Context(), "live"); err != nil || got == nil || got.Seq != 3 || string(got.Data) != string(own.Data) {
		t.Errorf("LoadSnapshot after Sweep = %v, %v; want the session's own", got, err)
	}
}
