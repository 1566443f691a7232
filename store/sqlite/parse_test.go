package sqlite

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// TestParseEnvelope checks the one-pass reader of stored envelopes against
// json.Unmarshal on what Append stores, and that it hands anything else
// back.
func TestParseEnvelope(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for i, e := range []cairn.Event{
		{V: 1, Seq: 1, At: at, Kind: cairn.KindCustom, Run: "r1", Data: json.RawMessage(`{"type":"a.b","payload":{"x":[1,2,"é\"}"]}}`)},
		{V: 1, Seq: 2, At: at, Kind: cairn.KindCustom, Run: "r\"1", Data: json.RawMessage(`{"type":"a.b","payload":null}`)},
		{V: 1, Seq: 10, At: at, Kind: cairn.KindCustom, Run: "", Data: json.RawMessage("  {\"type\":\"a.b\",\n\"payload\":1} ")},
	} {
		stored, err := storedOf(e)
		if err != nil {
			t.Fatal(err)
		}
		env := "{" + stored[sumLen:] // without its checksum
		var want cairn.Event
		if err := json.Unmarshal([]byte(env), &want); err != nil {
			t.Fatal(err)
		}
		var scratch []byte
		if got, sealed, msg := storedEvent([]byte(stored), &scratch, false); msg != "" || !sealed || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: storedEvent = %+v, sealed %v, %q; want %+v, sealed", stored, got, sealed, msg, want)
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

// TestStoredEvent_Damage changes each byte of a stored envelope in turn:
// every change is caught, whether it lands in the data, the envelope's
// fields, the checksum or its field's name. Envelopes written before the
// checksum are read without it, but not after one that has it.
func TestStoredEvent_Damage(t *testing.T) {
	e := cairn.Event{V: 1, Seq: 3, At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Kind: cairn.KindCustom, Run: "r",
		Data: json.RawMessage(`{"type":"a.b","payload":"the quick brown fox"}`)}
	stored, err := storedOf(e)
	if err != nil {
		t.Fatal(err)
	}
	var scratch []byte
	for i := range len(stored) {
		for _, flip := range []byte{0x01, 0x20, 0x80} {
			b := []byte(stored)
			b[i] ^= flip
			if got, _, msg := storedEvent(b, &scratch, false); msg == "" {
				t.Errorf("byte %d (%q) ^ %#x: read as %+v, want it refused", i, stored[i], flip, got)
			}
		}
	}

	old := "{" + stored[sumLen:]
	if got, sealed, msg := storedEvent([]byte(old), &scratch, false); msg != "" || sealed || got.Seq != 3 {
		t.Errorf("an envelope without checksum: %+v, sealed %v, %q; want it read", got, sealed, msg)
	}
	if _, _, msg := storedEvent([]byte(old), &scratch, true); msg == "" {
		t.Error("an envelope without checksum after one with it was read; want it refused")
	}
}

// BenchmarkEnvelope measures building the stored envelope of a ~1 KB event
// (its checksum included): the CPU part of an append.
func BenchmarkEnvelope(b *testing.B) {
	e := cairn.Event{V: 1, Seq: 7, At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Kind: cairn.KindCustom, Run: "r1",
		Data: json.RawMessage(`{"type":"bench.pad","payload":"` + strings.Repeat("x", 1000) + `"}`)}
	b.SetBytes(int64(len(e.Data)))
	for b.Loop() {
		if _, err := envelopes([]cairn.Event{e}); err != nil {
			b.Fatal(err)
		}
	}
}

// storedOf returns the stored envelope of e, as Append writes it.
func storedOf(e cairn.Event) (string, error) {
	bodies, err := envelopes([]cairn.Event{e})
	if err != nil {
		return "", err
	}
	return bodies[0], nil
}
