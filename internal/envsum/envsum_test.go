package envsum

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// TestAppend_Check seals an envelope and checks it, whole, with each byte
// changed in turn, without its checksum, and torn.
func TestAppend_Check(t *testing.T) {
	e := cairn.Event{V: 1, Seq: 3, At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Kind: cairn.KindCustom, Run: "r",
		Data: json.RawMessage(`{"type":"a.b","payload":"the quick brown fox"}`)}
	b, err := Append([]byte("keep"), e)
	if err != nil {
		t.Fatal(err)
	}
	sealed := b[len("keep"):]
	env, err := driver.AppendEnvelope(nil, e)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"crc32c":"`; string(sealed[:len(want)]) != want || string(sealed[Len:]) != string(env[1:]) {
		t.Fatalf("Append = %s; want the checksum field, then %s without its {", sealed, env)
	}
	if s, f := Check(sealed); !s || f != OK {
		t.Errorf("Check(%s) = %v, %v; want sealed, OK", sealed, s, f)
	}
	for i := range sealed {
		c := append([]byte(nil), sealed...)
		c[i] ^= 0x01
		if _, f := Check(c); f == OK {
			t.Errorf("byte %d (%q) changed: Check found nothing wrong", i, sealed[i])
		}
	}
	if s, f := Check(env); s || f != OK {
		t.Errorf("Check(an envelope without checksum) = %v, %v; want not sealed, OK", s, f)
	}
	for _, bad := range []string{"", "x", `{"crc32c":"1a2b`, `{"crc32c":"1A2B3C4D","v":1}`, `["v"]`} {
		if _, f := Check([]byte(bad)); f == OK {
			t.Errorf("Check(%q) found nothing wrong", bad)
		}
	}
	if b, err := Append([]byte("keep"), cairn.Event{At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil || string(b) != "keep" {
		t.Errorf("Append of a time RFC 3339 cannot write = %q, %v; want the buffer as it was and an error", b, err)
	}
}
