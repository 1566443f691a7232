package postgres

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// oldEncode is what the store stored before encode was built by hand:
// json.Encoder over the whole event, HTML left alone.
func oldEncode(t testing.TB, ev cairn.Event) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func checkEncode(t *testing.T, ev cairn.Event) {
	t.Helper()
	var enc encoder
	got, err := enc.encode(ev)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if want := oldEncode(t, ev); !bytes.Equal(got, want) {
		t.Fatalf("encode =\n%s\nwant\n%s", got, want)
	}
}

// TestEncode_AsEncodingJSON checks the envelope byte for byte against
// json.Encoder, for data with and without white space, odd strings and
// times.
func TestEncode_AsEncodingJSON(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	for _, ev := range []cairn.Event{
		{V: 1, Seq: 1, At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Kind: cairn.KindModelResponse, Run: "r", Data: json.RawMessage(`{"text":"hi"}`)},
		{V: 1, Seq: 2, At: time.Date(2026, 1, 2, 3, 4, 5, 0, paris), Kind: "custom", Run: `a<b>&"c"` + "\u2028\x01", Data: json.RawMessage(`{"a": [1, 2],` + "\n\t" + `"b" : "x y\tz <&>"}`)},
		{V: 1, Seq: 3, Kind: cairn.KindToolResult, Data: json.RawMessage(`{"s":"\u2028 \\n","n":-1.5e3,"t":true,"z":null}`)},
		{V: 1, Seq: 4, At: time.Unix(0, 1), Data: json.RawMessage(` {"padded":1} `)},
		{V: 1, Seq: 5, Data: nil},
	} {
		checkEncode(t, ev)
	}
}

// FuzzEncode checks encode against json.Encoder for any valid data and
// any run.
func FuzzEncode(f *testing.F) {
	f.Add([]byte(`{"a":1}`), "run")
	f.Add([]byte("{\"a\" :\n [1, \"x y\"]}"), "<&>")
	f.Fuzz(func(t *testing.T, data []byte, run string) {
		if !json.Valid(data) {
			return
		}
		checkEncode(t, cairn.Event{V: 1, Seq: 9, At: time.Unix(1e9, 5), Kind: "custom", Run: run, Data: data})
	})
}

// BenchmarkEncode encodes a realistic 1 KB tool result, by hand and (for
// comparison) with json.Encoder over the whole event.
func BenchmarkEncode(b *testing.B) {
	ev := cairn.MustEvent(cairn.KindToolResult, "run-1", cairn.ToolResult{CallID: "call_1", Name: "read_file",
		Output: string(bytes.Repeat([]byte("id,name,total\n1,alpha,10\n"), 40)), DurationMS: 2})
	ev.Seq = 2
	b.Run("store", func(b *testing.B) {
		var enc encoder
		for b.Loop() {
			if _, err := enc.encode(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			oldEncode(b, ev)
		}
	})
}
