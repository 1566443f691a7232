package driver_test

import (
	"encoding/json"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestParseEnvelope(t *testing.T) {
	for _, e := range storetest.Conversation(0, "r1", "plain text") {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := driver.ParseEnvelope(b)
		if !ok {
			// Data with escapes (<, &, quotes) takes the general path.
			var want cairn.Event
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("seq %d: neither path decodes %s", e.Seq, b)
			}
			continue
		}
		if got.V != e.V || got.Seq != e.Seq || !got.At.Equal(e.At) || got.Kind != e.Kind || got.Run != e.Run || string(got.Data) != string(e.Data) {
			t.Errorf("seq %d: got %+v, want %+v", e.Seq, got, e)
		}
	}
	for _, bad := range []string{
		``, `{}`, `{"v":1,"seq":1}`, `{"seq":1,"v":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{}}`,
		`{"v":1,"seq":01,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{}}`,
		`{"v":1,"seq":1,"at":"yesterday","kind":"custom","run":"","data":{}}`,
		`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"cus\"tom","run":"","data":{}}`,
		`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{"a":}}`,
		`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":[]}`,
	} {
		if _, ok := driver.ParseEnvelope([]byte(bad)); ok {
			t.Errorf("ParseEnvelope(%s) accepted it", bad)
		}
	}
}
