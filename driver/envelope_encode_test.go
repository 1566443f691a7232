package driver_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/storetest"
)

// marshalEnvelope is what AppendEnvelope must write: json.Encoder over the
// event with HTML escaping off and the time in UTC, less its newline.
func marshalEnvelope(t testing.TB, e cairn.Event) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	e.At = e.At.UTC()
	if err := enc.Encode(e); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// awkwardEvents are events whose strings and data encoders like to rewrite.
func awkwardEvents() []cairn.Event {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.FixedZone("X", 3600))
	return []cairn.Event{
		{V: 1, Seq: 1, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Kind: cairn.KindCustom, Run: "r", Data: json.RawMessage(`{"type":"a.b","payload":1}`)},
		{V: 1, Seq: 2, At: at, Kind: cairn.KindCustom, Run: `a<b>&"c"\` + "\u2028\u2029\x00\x01\x1f\b\f\n\r\t\x7f",
			Data: json.RawMessage("{ \"type\" : \"a.b\",\n\t\"payload\" : {\"html\":\"<b>&amp;</b>\", \"u\": \"日本 \\u2713 \\\"q\\\" \\\\\", \"n\": [1, 2.50, -1e3, true, null]} }")},
		{V: 1, Seq: 3, At: at.Add(time.Nanosecond), Kind: "é日本", Run: "bad\xffutf8",
			Data: json.RawMessage(" {\"type\":\"x\",\"payload\":\"spaces  inside\\\\\",\"t\":\"tab\\tand \\\" quote \"} \r\n")},
		{V: 1, Seq: 4, At: time.Unix(0, 1), Kind: cairn.KindMemoryReset, Run: "", Data: json.RawMessage(`{}`)},
		{V: 1, Seq: 5, At: time.Unix(1e9, 0), Kind: cairn.KindCustom, Run: "nil data"},
	}
}

// TestAppendEnvelope checks the envelope byte for byte against
// encoding/json, appended to an empty buffer and after other bytes.
func TestAppendEnvelope(t *testing.T) {
	evs := append(awkwardEvents(), storetest.Conversation(0, "run-1", "Hello <world> & \"you\"")...)
	for _, e := range evs {
		want := marshalEnvelope(t, e)
		got, err := driver.AppendEnvelope(nil, e)
		if err != nil {
			t.Fatalf("seq %d: %v", e.Seq, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("seq %d:\n got %s\nwant %s", e.Seq, got, want)
		}
		got, err = driver.AppendEnvelope([]byte("prefix"), e)
		if err != nil || string(got) != "prefix"+string(want) {
			t.Errorf("seq %d after a prefix: got %s, %v", e.Seq, got, err)
		}
	}
}

// TestAppendEnvelope_Time checks the time: UTC, nanoseconds without their
// trailing zeros, and an error for a year RFC 3339 cannot write.
func TestAppendEnvelope_Time(t *testing.T) {
	for at, want := range map[time.Time]string{
		time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.FixedZone("X", -5*3600)): "2026-01-02T08:04:05.12Z",
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC):                             "2026-01-02T03:04:05Z",
		time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC):                             "2026-01-02T03:04:05.000000001Z",
	} {
		b, err := driver.AppendEnvelope(nil, cairn.Event{V: 1, Seq: 1, At: at, Kind: cairn.KindCustom, Data: json.RawMessage(`{}`)})
		if err != nil || !bytes.Contains(b, []byte(`"at":"`+want+`"`)) {
			t.Errorf("%v: got %s, %v; want at %s", at, b, err, want)
		}
	}
	b, err := driver.AppendEnvelope([]byte("keep"), cairn.Event{V: 1, Seq: 1, At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	if !errors.Is(err, cairn.ErrInvalidEvent) || string(b) != "keep" {
		t.Errorf("year 10000: got %q, %v; want the buffer as it was and ErrInvalidEvent", b, err)
	}
}

// TestAppendEnvelope_Allocs checks that appending to a buffer with room
// allocates nothing, escapes and compaction included. (Appending to nil
// allocates once: see BenchmarkAppendEnvelope/new; the race detector
// counts more, so it is not asserted here.)
func TestAppendEnvelope_Allocs(t *testing.T) {
	e := awkwardEvents()[1]
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { _, _ = driver.AppendEnvelope(buf[:0], e) }); n != 0 {
		t.Errorf("appending to a buffer with room: %v allocations, want 0", n)
	}
}

// TestAppendEnvelope_RoundTrip reads every envelope back with
// ParseEnvelope, or encoding/json where it hands the envelope back.
func TestAppendEnvelope_RoundTrip(t *testing.T) {
	for _, e := range append(awkwardEvents(), storetest.Conversation(0, "run-1", "text")...) {
		checkRoundTrip(t, e)
	}
}

// FuzzAppendEnvelope checks AppendEnvelope against encoding/json and
// ParseEnvelope(AppendEnvelope(e)) == e, for any valid data, kind, run,
// seq and time.
func FuzzAppendEnvelope(f *testing.F) {
	for _, e := range awkwardEvents() {
		f.Add(e.Seq, e.At.UnixNano(), string(e.Kind), e.Run, []byte(e.Data))
	}
	f.Add(int64(-1), int64(0), "custom", "r", []byte(`[1, 2]`))
	f.Add(int64(7), int64(1), "", "", []byte(`"a \" b"`))
	f.Add(int64(1), int64(0), "custom", "r", []byte{})
	f.Fuzz(func(t *testing.T, seq, nanos int64, kind, run string, data []byte) {
		switch {
		case len(data) == 0:
			data = nil // encoding/json writes null for nil only
		case !json.Valid(data):
			return
		}
		e := cairn.Event{V: 1, Seq: seq, At: time.Unix(0, nanos), Kind: cairn.Kind(kind), Run: run, Data: data}
		got, err := driver.AppendEnvelope(nil, e)
		if err != nil {
			t.Fatal(err)
		}
		if want := marshalEnvelope(t, e); !bytes.Equal(got, want) {
			t.Fatalf("got\n%s\nwant\n%s", got, want)
		}
		checkRoundTrip(t, e)
	})
}

// checkRoundTrip checks that the envelope of e reads back as e, with its
// time in UTC and its data compacted: through ParseEnvelope when e is in
// the form it reads (an object for data, a seq not below 0, kind and run
// valid UTF-8 that needs no escape), through encoding/json otherwise.
func checkRoundTrip(t *testing.T, e cairn.Event) {
	t.Helper()
	b, err := driver.AppendEnvelope(nil, e)
	if err != nil {
		t.Fatal(err)
	}
	want := e
	want.At = e.At.UTC()
	if want.Data = compact(t, e.Data); want.Data == nil {
		want.Data = json.RawMessage("null")
	}
	got, ok := driver.ParseEnvelope(b)
	if !ok {
		if parsable(e) {
			t.Fatalf("ParseEnvelope refused %s", b)
		}
		got = cairn.Event{}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s does not decode: %v", b, err)
		}
		if !utf8.ValidString(e.Run) || !utf8.ValidString(string(e.Kind)) {
			return // invalid UTF-8 comes back as U+FFFD, as encoding/json writes it
		}
	}
	if got.V != want.V || got.Seq != want.Seq || !got.At.Equal(want.At) || got.At.Location() != time.UTC ||
		got.Kind != want.Kind || got.Run != want.Run || !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("%s read back as\n%+v\nwant\n%+v", b, got, want)
	}
}

func parsable(e cairn.Event) bool {
	plain := func(s string) bool {
		return utf8.ValidString(s) && !strings.ContainsAny(s, "\"\\\u2028\u2029") &&
			strings.IndexFunc(s, func(r rune) bool { return r < 0x20 }) < 0
	}
	return e.Seq >= 0 && plain(string(e.Kind)) && plain(e.Run) &&
		bytes.HasPrefix(compact(nil, e.Data), []byte("{")) && jsontext.Value(e.Data).IsValid()
}

func compact(t testing.TB, data []byte) json.RawMessage {
	if len(data) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil && t != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// BenchmarkAppendEnvelope encodes a ~1 KB tool result (text with spaces
// and newlines inside its strings) into a reused buffer and into a new
// one, and the same data spaced out, which has to be compacted.
func BenchmarkAppendEnvelope(b *testing.B) {
	e := cairn.MustEvent(cairn.KindToolResult, "run-1", cairn.ToolResult{CallID: "call_1", Name: "read_file",
		Output: strings.Repeat("id, name, total\n1, alpha, 10\n", 35), DurationMS: 2})
	e.Seq = 2
	spaced := e
	var ind bytes.Buffer
	if err := json.Indent(&ind, e.Data, "", "  "); err != nil {
		b.Fatal(err)
	}
	spaced.Data = ind.Bytes()
	for _, c := range []struct {
		name  string
		e     cairn.Event
		reuse bool
	}{{"reuse", e, true}, {"new", e, false}, {"spaced", spaced, true}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.e.Data)))
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				out, err := driver.AppendEnvelope(buf[:0], c.e)
				if err != nil {
					b.Fatal(err)
				}
				if c.reuse {
					buf = out
				}
			}
		})
	}
}
