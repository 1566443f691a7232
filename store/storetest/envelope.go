package storetest

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Awkward returns events numbered from last+1 whose strings and data
// encoders like to rewrite: <, > and &, escapes, unicode, U+2028, spaces,
// tabs and escaped newlines inside strings, white space between the
// tokens of nested objects, a time outside UTC with nanoseconds, and runs
// that need escapes.
func Awkward(last int64) []cairn.Event {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.FixedZone("UTC+5:30", 5*3600+1800))
	custom := func(i int, run, payload string) cairn.Event {
		return cairn.Event{At: at.Add(time.Duration(i) * time.Microsecond), Kind: cairn.KindCustom, Run: run,
			Data: json.RawMessage(`{"type":"test.awkward","payload":` + payload + `}`)}
	}
	evs := []cairn.Event{
		custom(0, "r<&>", `{"html":"<b>&amp;</b> <script>","amp":"a&b"}`),
		custom(1, "run-é日本", "{ \"nested\" : { \"a\" : [ 1 , 2.50 , -1e3 , true , null ] ,\n\t\"b\" : { } } ,\r\n \"c\":\"x\" }"),
		custom(2, `quote"back\slash`, `{"s":"spaces  and\ttabs, \"quotes\", \\back\\slashes, \nnewlines\r\n","u":"\u00e9t\u00e9 ✓ 日本語 😀","ls":"a`+"\u2028"+`b`+"\u2029"+`c"}`),
		custom(3, "", `  "a string payload with  spaces"  `),
		custom(4, "tab\trun", `[ {"k" : "v"} , [ ] , "" ]`),
	}
	user := cairn.MustEvent(cairn.KindMessageUser, "r<&>", cairn.MessageUser{Parts: []cairn.Part{{Type: "text",
		Text: "Line one\nline two <tag> & \"quoted\" \u2028 end"}}})
	user.At = at.Add(5 * time.Microsecond)
	user.Data = json.RawMessage("{\n  \"parts\": [\n    {\"type\": \"text\", \"text\": \"Line one\\nline two <tag> & \\\"quoted\\\" \\u2028 end\"}\n  ]\n}")
	return Number(last, append(evs, user)...)
}

// testEnvelopes appends awkward events and a conversation, and checks the
// envelopes: as the backend stored them (when it has the Envelopes hook),
// byte for byte driver.AppendEnvelope's of the events appended; as Load
// returns them after a reopen, events that encode to the same bytes, and,
// for a backend with the hook, that carry the stored data and a UTC time
// unchanged (no encoding on the way out either). So every backend stores
// and returns byte-identical envelopes for the same events.
func testEnvelopes(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	evs := Awkward(0)
	mustAppend(t, s, id, 0, evs...)
	last := int64(len(evs))
	for _, e := range Conversation(last, "run-2", "<b>bold</b> & \"text\"\n") {
		mustAppend(t, s, id, last, e) // one at a time: the single-event paths
		evs = append(evs, e)
		last++
	}
	want := make([][]byte, len(evs))
	for i, e := range evs {
		b, err := driver.AppendEnvelope(nil, e)
		if err != nil {
			t.Fatalf("AppendEnvelope(seq %d): %v", e.Seq, err)
		}
		want[i] = b
	}

	stored := h.abilities.Envelopes != nil
	if stored {
		got := h.abilities.Envelopes(t, s, id)
		if len(got) != len(want) {
			t.Fatalf("the backend stored %d envelopes, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("seq %d stored as\n%s\nwant (driver.AppendEnvelope)\n%s", evs[i].Seq, got[i], want[i])
			}
		}
	}

	rec := mustLoad(t, h.store(t), id)
	if len(rec.Events) != len(want) {
		t.Fatalf("Load returned %d events, want %d", len(rec.Events), len(want))
	}
	for i, e := range rec.Events {
		got, err := driver.AppendEnvelope(nil, e)
		if err != nil {
			t.Fatalf("AppendEnvelope(loaded seq %d): %v", e.Seq, err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Errorf("seq %d loaded, encoded again:\n%s\nwant\n%s", evs[i].Seq, got, want[i])
			continue
		}
		if !stored {
			continue
		}
		// The data is the stored data's bytes, the time as stored, in UTC.
		data := want[i][bytes.LastIndex(want[i], []byte(`,"data":`))+len(`,"data":`) : len(want[i])-1]
		if !bytes.Equal(e.Data, data) || e.At.Location() != time.UTC {
			t.Errorf("seq %d loaded with data %s at %v; want the stored data %s, at in UTC", e.Seq, e.Data, e.At, data)
		}
	}
}
