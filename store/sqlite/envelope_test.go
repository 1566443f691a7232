package sqlite_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_AppendKeepsBytes appends events whose data has spacing,
// escapes and characters that encoders like to rewrite, and gets the same
// bytes back after a reopen, less the white space outside strings (the
// envelope is driver.AppendEnvelope's), with the time to the nanosecond.
func TestStore_AppendKeepsBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	s := openStore(t, path, cairn.StoreOptions{})
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "bytes"}); err != nil {
		t.Fatal(err)
	}
	datas := []string{
		`{ "type" : "test.raw", "payload" : {"html":"<b>&</b>", "n": 1.50, "big": 12345678901234567890} }`,
		`{"type":"test.raw","payload":"\u00e9t\u00e9 ✓ \"q\""}`,
		"{\n\t\"type\": \"test.raw\",\n\t\"payload\": null\n}",
	}
	at := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.FixedZone("X", 3600))
	var evs []cairn.Event
	for i, d := range datas {
		evs = append(evs, cairn.Event{V: cairn.FormatVersion, Seq: int64(i + 1), At: at, Kind: cairn.KindCustom, Run: "r<&>", Data: json.RawMessage(d)})
	}
	if err := s.Append(t.Context(), "bytes", 0, evs...); err != nil {
		t.Fatal(err)
	}
	s.Close()

	rec, err := openStore(t, path, cairn.StoreOptions{}).Load(t.Context(), "bytes", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != len(evs) {
		t.Fatalf("loaded %d events, want %d", len(rec.Events), len(evs))
	}
	for i, e := range rec.Events {
		var want bytes.Buffer
		if err := json.Compact(&want, evs[i].Data); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.Data, want.Bytes()) {
			t.Errorf("event %d data:\n got %s\nwant %s", i+1, e.Data, want.Bytes())
		}
		if !e.At.Equal(at) || e.At.Location() != time.UTC {
			t.Errorf("event %d at = %v, want %v in UTC", i+1, e.At, at.UTC())
		}
		if e.Run != "r<&>" || e.Kind != cairn.KindCustom || e.V != cairn.FormatVersion || e.Seq != int64(i+1) {
			t.Errorf("event %d envelope = {v %d seq %d %s run %q}", i+1, e.V, e.Seq, e.Kind, e.Run)
		}
	}
}

// TestStore_TimesExact checks that created and updated times keep their
// nanoseconds, so List's order and cursor are exact.
func TestStore_TimesExact(t *testing.T) {
	clock := storetest.NewClock()
	clock.Advance(123456789 * time.Nanosecond)
	s := openStore(t, filepath.Join(t.TempDir(), "cairn.db"), cairn.StoreOptions{Now: clock.Now})
	created := time.Date(2025, 12, 31, 23, 59, 59, 999999999, time.UTC)
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "t", CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Nanosecond)
	if err := s.Append(t.Context(), "t", 0, storetest.Custom(1, "x")); err != nil {
		t.Fatal(err)
	}
	page, err := s.List(t.Context(), cairn.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 1 {
		t.Fatalf("List has %d sessions, want 1", len(page.Sessions))
	}
	info := page.Sessions[0]
	if !info.CreatedAt.Equal(created) || !info.UpdatedAt.Equal(clock.Now()) {
		t.Errorf("created %v updated %v, want %v and %v", info.CreatedAt, info.UpdatedAt, created, clock.Now())
	}
}
