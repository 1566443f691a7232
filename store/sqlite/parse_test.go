package sqlite

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// TestParseEnvelope checks the one-pass reader of stored envelopes against
// json.Unmarshal on what envelope writes, and that it hands anything else
// back.
func TestParseEnvelope(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for i, e := range []cairn.Event{
		{V: 1, Seq: 1, At: at, Kind: cairn.KindCustom, Run: "r1", Data: json.RawMessage(`{"type":"a.b","payload":{"x":[1,2,"é\"}"]}}`)},
		{V: 1, Seq: 2, At: at, Kind: cairn.KindCustom, Run: "r\"1", Data: json.RawMessage(`{"type":"a.b","payload":null}`)},
		{V: 1, Seq: 10, At: at, Kind: cairn.KindCustom, Run: "", Data: json.RawMessage("  {\"type\":\"a.b\",\n\"payload\":1} ")},
	} {
		env, err := envelope(e)
		if err != nil {
			t.Fatal(err)
		}
		var want cairn.Event
		if err := json.Unmarshal([]byte(env), &want); err != nil {
			t.Fatal(err)
		}
		got, ok := parseEnvelope([]byte(env))
		if i == 1 {
			if ok {
				t.Errorf("%s: parsed a run with an escape; want it handed back", env)
			}
			continue
		}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v (%v), want %+v", env, got, ok, want)
		}
	}
	for _, bad := range []string{
		`{"v":1,"seq":-1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"r","data":{}}`,
		`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"r","data":{"a":}}`,
		`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"r","data":{}`,
		`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"r","data":{}} `,
	} {
		if _, ok := parseEnvelope([]byte(bad)); ok {
			t.Errorf("parsed %s; want it handed back", bad)
		}
	}
}
