package cairn_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/storetest"
)

func sampleMemory(t *testing.T) *cairn.Memory {
	t.Helper()
	evs := append(storetest.Conversation(0, "r1", "What is 2*(3+4)?"), storetest.UserTurn(16, "r2", "thanks")...)
	m, err := cairn.NewMemory(evs...)
	if err != nil {
		t.Fatal(err)
	}
	m.Session = &cairn.SessionMeta{ID: "review-pr-42", CreatedAt: evs[0].At, Labels: map[string]string{"team": "a"}}
	return m
}

func TestMemory_DumpLoadRoundTrip(t *testing.T) {
	m := sampleMemory(t)
	doc, err := m.DumpJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := cairn.LoadJSON(doc)
	if err != nil {
		t.Fatalf("LoadJSON of a dumped memory: %v", err)
	}
	again, err := got.DumpJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, again) {
		t.Fatalf("dump → load → dump changed the document:\n%s\n---\n%s", doc, again)
	}
	s1, _ := m.State()
	s2, _ := got.State()
	a, _ := s1.Snapshot()
	b, _ := s2.Snapshot()
	if !bytes.Equal(a, b) {
		t.Fatalf("snapshots differ:\n%s\n%s", a, b)
	}
	if got.Session == nil || got.Session.ID != "review-pr-42" || got.Session.Labels["team"] != "a" {
		t.Fatalf("session meta lost: %+v", got.Session)
	}
}

// TestLoadJSON_Golden loads the golden documents of every format version.
func TestLoadJSON_Golden(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/v*.json")
	if len(files) == 0 {
		t.Fatal("no golden documents in testdata/golden")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, err := cairn.LoadJSON(data)
			if err != nil {
				t.Fatalf("LoadJSON: %v", err)
			}
			st, err := m.State()
			if err != nil {
				t.Fatal(err)
			}
			snap, _ := st.Snapshot()
			want, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".snapshot")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(snap, bytes.TrimSpace(want)) {
				t.Fatalf("snapshot of %s:\n got %s\nwant %s", f, snap, want)
			}
		})
	}
}

func TestLoadJSON_Rejects(t *testing.T) {
	good, err := sampleMemory(t).DumpJSON()
	if err != nil {
		t.Fatal(err)
	}
	doc := string(good)
	replace := func(old, new string) string {
		if !strings.Contains(doc, old) {
			t.Fatalf("sample document lacks %q", old)
		}
		return strings.Replace(doc, old, new, 1)
	}
	cases := []struct {
		name  string
		input string
		index int    // want event index, -1 for the document
		field string // want field
		msg   string // want in the message
		is    error  // want errors.Is
	}{
		{"empty", "", -1, "", "truncated", nil},
		{"not an object", "[1,2]", -1, "", "must be a JSON object", nil},
		{"malformed", `{"format": "cairn.memory",, }`, -1, "", "malformed JSON", nil},
		{"truncated", doc[:len(doc)/2], -1, "events", "truncated", nil},
		{"trailing garbage", doc + "xyz", -1, "", "trailing data", nil},
		{"second document", doc + doc, -1, "", "trailing data", nil},
		{"wrong format", replace(`"format":"cairn.memory"`, `"format":"other"`), -1, "format", `want "cairn.memory"`, nil},
		{"newer version", replace(`"version":1`, `"version":99`), -1, "version", "unsupported version 99", nil},
		{"version zero", replace(`"version":1`, `"version":0`), -1, "version", "whole number", nil},
		{"version string", replace(`"version":1`, `"version":"1"`), -1, "version", "must be a number", nil},
		{"unknown top field", replace(`"version":1`, `"version":1,"extra":true`), -1, "extra", "unknown field", nil},
		{"missing events", `{"format":"cairn.memory","version":1}`, -1, "events", "is missing", nil},
		{"events not array", `{"format":"cairn.memory","version":1,"events":{}}`, -1, "events", "must be an array", nil},
		{"bad session id", replace(`"id":"review-pr-42"`, `"id":"../etc"`), -1, "session.id", "invalid session id", cairn.ErrInvalidID},
		{"unknown kind", replace(`"kind":"memory.reset"`, `"kind":"memory.wipe"`), 1, "kind", `unknown kind "memory.wipe"`, nil},
		{"seq gap", replace(`"seq":3,`, `"seq":4,`), 2, "seq", "a gap", nil},
		{"seq repeat", replace(`"seq":3,`, `"seq":2,`), 2, "seq", "a repeat", nil},
		{"seq string", replace(`"seq":3,`, `"seq":"3",`), 2, "seq", "where a int64 belongs", nil},
		{"missing run", replace(`"run":"r1","data":{}`, `"data":{}`), 1, "run", "is missing", nil},
		{"unknown envelope field", replace(`"seq":2,`, `"seq":2,"colour":1,`), 1, "colour", "unknown field", nil},
		{"bad time", replace(`"at":"2026-01-02T03:04:05.124456789Z"`, `"at":"yesterday"`), 0, "at", "RFC 3339", nil},
		{"data unknown field", replace(`{"text":"You are a careful assistant."}`, `{"text":"x","tone":"dry"}`), 2, "data.tone", "unknown field", nil},
		{"data missing field", replace(`{"text":"You are a careful assistant."}`, `{}`), 2, "data.text", "is missing", nil},
		{"data mistyped", replace(`{"text":"You are a careful assistant."}`, `{"text":42}`), 2, "data.text", "where a string belongs", nil},
		{"data null", replace(`{"text":"You are a careful assistant."}`, `null`), 2, "data", "JSON object", nil},
		{"tool call without id", replace(`"id":"call_1",`, ``), 4, "data.tool_calls.0.id", "is missing", nil},
		{"bad run status", replace(`"status":"completed"`, `"status":"done"`), 15, "data.status", `"done"`, nil},
		// Strict everywhere: a name twice, invalid UTF-8, a result without its call.
		{"duplicate in data", replace(`{"text":"You are a careful assistant."}`, `{"text":"You are a careful assistant.","text":"EVIL"}`), 2, "data.text", "appears twice", nil},
		{"duplicate escaped", replace(`{"text":"You are a careful assistant."}`, `{"text":"You are a careful assistant.","te\u0078t":"EVIL"}`), 2, "data.text", "appears twice", nil},
		{"duplicate in nested data", replace(`{"expression":"2*(3+4)"}`, `{"expression":"2*(3+4)","expression":"rm"}`), 4, "data.tool_calls.0.args.expression", "appears twice", nil},
		{"duplicate in a part", replace(`{"type":"text","text":"thanks"}`, `{"type":"text","text":"thanks","text":"EVIL"}`), 17, "data.parts.0.text", "appears twice", nil},
		{"duplicate in a variable", replace(`{"name":"Alice",`, `{"name":"Alice","name":"Eve",`), 10, "data.set.user.name", "appears twice", nil},
		{"duplicate envelope field", replace(`"seq":3,`, `"seq":3,"kind":"message.user",`), 2, "kind", "appears twice", nil},
		{"duplicate document field", replace(`"version":1,`, `"version":1,"version":1,`), -1, "version", "appears twice", nil},
		{"duplicate in session", replace(`"labels":{"team":"a"}`, `"labels":{"team":"a","team":"b"}`), -1, "session.labels.team", "appears twice", nil},
		{"invalid UTF-8 in data", replace(`"You are a careful assistant."`, "\"You are a caref\xffl assistant.\""), 2, "data.text", "not valid UTF-8", nil},
		{"invalid UTF-8 in nested data", replace(`"Alice"`, "\"Al\xc3ce\""), 10, "data.set.user.name", "not valid UTF-8", nil},
		{"invalid UTF-8 in the envelope", replace(`"run":"r2","data":{"parts"`, "\"run\":\"r\xff\",\"data\":{\"parts\""), 17, "run", "not valid UTF-8", nil},
		{"invalid UTF-8 in session", replace(`"team":"a"`, "\"team\":\"\xff\""), -1, "session.labels.team", "not valid UTF-8", nil},
		{"lone surrogate", replace(`"You are a careful assistant."`, `"You are \ud800 careful."`), 2, "data.text", "surrogate", nil},
		{"tool result without its call", replace(`"call_id":"call_1","name":"calc"`, `"call_id":"call_9","name":"calc"`), 5, "data.call_id", `call "call_9", which no model.response asked for`, nil},
		{"tool result after a reset", replace(`{"v":1,"seq":2,"at":"2026-01-02T03:04:05.125456789Z","kind":"memory.reset","run":"r1","data":{}},`, `{"v":1,"seq":2,"at":"2026-01-02T03:04:05.125456789Z","kind":"custom","run":"r1","data":{"type":"a.b","payload":null}},`), -2, "", "", nil},
	}
	for _, c := range cases {
		if c.index == -2 {
			continue // a control: see TestLoadJSON_ToolResultAfterReset
		}
		t.Run(c.name, func(t *testing.T) {
			m, err := cairn.LoadJSON([]byte(c.input))
			if m != nil {
				t.Errorf("LoadJSON returned a memory along with the error")
			}
			le, ok := errors.AsType[*cairn.MemoryLoadError](err)
			if !ok {
				t.Fatalf("got %v (%T), want a *MemoryLoadError", err, err)
			}
			if le.Index != c.index || le.Field != c.field || !strings.Contains(le.Error(), c.msg) {
				t.Errorf("got index %d field %q: %v\nwant index %d field %q containing %q", le.Index, le.Field, le, c.index, c.field, c.msg)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, c.is)
			}
			if le.Offset > int64(len(c.input)) {
				t.Errorf("offset %d past the input's %d bytes", le.Offset, len(c.input))
			}
			if c.index >= 0 && c.field != "seq" && le.Seq != int64(c.index)+1 {
				t.Errorf("seq %d, want %d", le.Seq, c.index+1)
			}
		})
	}
}

func TestLoadJSON_Offset(t *testing.T) {
	doc, _ := sampleMemory(t).DumpJSON()
	bad := strings.Replace(string(doc), `"kind":"memory.reset"`, `"kind":"memory.wipe"`, 1)
	_, err := cairn.LoadJSON([]byte(bad))
	le, ok := errors.AsType[*cairn.MemoryLoadError](err)
	if !ok {
		t.Fatal(err)
	}
	want := int64(strings.Index(bad, `"kind":"memory.wipe"`))
	if le.Offset != want {
		t.Fatalf("offset = %d, want %d (the kind field of event 1)", le.Offset, want)
	}
}

// TestLoadJSON_StrictOffsets checks that the refusals added for duplicate
// names, invalid UTF-8 and results without their call point at the byte
// where the fault is.
func TestLoadJSON_StrictOffsets(t *testing.T) {
	doc, _ := sampleMemory(t).DumpJSON()
	for _, c := range []struct{ old, new, at string }{
		{`{"text":"You are a careful assistant."}`, `{"text":"You are a careful assistant.","text":"EVIL"}`, `"text":"EVIL"`},
		{`"Alice"`, "\"Al\xc3ce\"", "\xc3ce\""},
		{`"call_id":"call_1","name":"calc"`, `"call_id":"call_9","name":"calc"`, `"call_id":"call_9"`},
		{`"seq":3,`, `"seq":3,"seq":3,`, `"seq":3,"at"`},
	} {
		bad := strings.Replace(string(doc), c.old, c.new, 1)
		_, err := cairn.LoadJSON([]byte(bad))
		le, ok := errors.AsType[*cairn.MemoryLoadError](err)
		if !ok {
			t.Fatalf("%s: %v", c.new, err)
		}
		want := int64(strings.Index(bad, c.at))
		if le.Offset != want {
			t.Errorf("%s: offset %d (%q), want %d (%q)", c.new, le.Offset, bad[le.Offset:min(le.Offset+12, int64(len(bad)))], want, c.at)
		}
	}
}

// TestLoadJSON_ToolResultAfterReset: a call asked for before a
// memory.reset cannot be answered after it.
func TestLoadJSON_ToolResultAfterReset(t *testing.T) {
	doc := `{"format":"cairn.memory","version":1,"events":[
{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"model.response","run":"r","data":{"text":"","tool_calls":[{"id":"c1","name":"calc","args":{}}],"model":"m","usage":{},"finish_reason":"tool_calls","latency_ms":0}},
{"v":1,"seq":2,"at":"2026-01-02T03:04:05Z","kind":"tool.result","run":"r","data":{"call_id":"c1","name":"calc","output":"1","is_error":false,"duration_ms":0}},
{"v":1,"seq":3,"at":"2026-01-02T03:04:05Z","kind":"memory.reset","run":"r","data":{}},
{"v":1,"seq":4,"at":"2026-01-02T03:04:05Z","kind":"tool.result","run":"r","data":{"call_id":"c1","name":"calc","output":"2","is_error":false,"duration_ms":0}}]}`
	_, err := cairn.LoadJSON([]byte(doc))
	le, ok := errors.AsType[*cairn.MemoryLoadError](err)
	if !ok || le.Index != 3 || le.Seq != 4 || le.Field != "data.call_id" {
		t.Fatalf("got %v, want event 3 (seq 4) field data.call_id", err)
	}
	without := strings.Replace(doc, `"kind":"memory.reset","run":"r","data":{}`, `"kind":"message.system","run":"r","data":{"text":"x"}`, 1)
	if _, err := cairn.LoadJSON([]byte(without)); err != nil {
		t.Fatalf("without the reset the call is still asked for: %v", err)
	}
}

func TestMemory_AddRefusesToolResultWithoutCall(t *testing.T) {
	var m cairn.Memory
	ask := cairn.MustEvent(cairn.KindModelResponse, "r", cairn.ModelResponse{ToolCalls: []cairn.ToolCall{{ID: "c1", Name: "calc", Args: []byte(`{}`)}}})
	result := func(id string) cairn.Event {
		return cairn.MustEvent(cairn.KindToolResult, "r", cairn.ToolResult{CallID: id, Name: "calc"})
	}
	if _, err := m.Add(result("c1")); !errors.Is(err, cairn.ErrInvalidEvent) || !strings.Contains(err.Error(), `"c1"`) {
		t.Fatalf("result before its call: got %v, want ErrInvalidEvent naming c1", err)
	}
	if _, err := m.Add(ask, result("c1")); err != nil {
		t.Fatalf("result after its call, in one Add: %v", err)
	}
	if _, err := m.Add(result("c1")); err != nil {
		t.Fatalf("result after its call, in a later Add: %v", err)
	}
	reset := cairn.MustEvent(cairn.KindMemoryReset, "r", cairn.MemoryReset{})
	if _, err := m.Add(reset, result("c1")); !errors.Is(err, cairn.ErrInvalidEvent) {
		t.Fatalf("result after a reset: got %v, want ErrInvalidEvent", err)
	}
	if m.Len() != 3 {
		t.Fatalf("a refused Add changed the memory: %d events, want 3", m.Len())
	}
	if _, err := m.Add(result("c1")); err != nil {
		t.Fatalf("the refused Add's reset was applied: %v", err)
	}
}

func TestValidateEvent_Strict(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, data := range []string{
		`{"text":"You are careful.","text":"EVIL"}`,
		"{\"text\":\"caf\xe9\"}",
		`{"text":"\udc00"}`,
	} {
		e := cairn.Event{V: 1, Seq: 1, At: at, Kind: cairn.KindMessageSystem, Run: "r", Data: []byte(data)}
		if _, err := cairn.ValidateEvents([]cairn.Event{e}, 1); !errors.Is(err, cairn.ErrInvalidEvent) {
			t.Errorf("%q: got %v, want ErrInvalidEvent", data, err)
		}
		if _, err := driver.CheckAppend(cairn.Limits{}, "s", 0, []cairn.Event{e}); !errors.Is(err, cairn.ErrInvalidEvent) {
			t.Errorf("CheckAppend %q: got %v, want ErrInvalidEvent", data, err)
		}
	}
	e := cairn.Event{V: 1, Seq: 1, At: at, Kind: cairn.KindMessageSystem, Run: "r\xff", Data: []byte(`{"text":"x"}`)}
	if _, err := cairn.ValidateEvents([]cairn.Event{e}, 1); !errors.Is(err, cairn.ErrInvalidEvent) {
		t.Errorf("run ID of invalid UTF-8: got %v, want ErrInvalidEvent", err)
	}
}

func TestLoadJSON_TooLarge(t *testing.T) {
	m, err := cairn.NewMemory(storetest.Padded(1, 5000))
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := m.DumpJSON()
	_, err = cairn.LoadJSON(doc, cairn.LoadOptions{Limits: cairn.Limits{MaxEventBytes: 4096}})
	if !errors.Is(err, cairn.ErrTooLarge) {
		t.Fatalf("5 KB event with a 4 KB limit: got %v, want ErrTooLarge", err)
	}
	_, err = cairn.LoadJSON(doc, cairn.LoadOptions{MaxDocumentBytes: 1000})
	if !errors.Is(err, cairn.ErrTooLarge) {
		t.Fatalf("document over its limit: got %v, want ErrTooLarge", err)
	}
}

func TestLoadJSON_Custom(t *testing.T) {
	doc := `{"format":"cairn.memory","version":1,"events":[
{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{"type":"app.search","payload":{"q":"go"}}}]}`
	m, err := cairn.LoadJSON([]byte(doc))
	if err != nil {
		t.Fatalf("custom event: %v", err)
	}
	if m.Len() != 1 || m.Event(0).Kind != cairn.KindCustom {
		t.Fatalf("got %d events", m.Len())
	}
}

func TestMemory_Add(t *testing.T) {
	var m cairn.Memory
	evs, err := m.Add(cairn.MustEvent(cairn.KindMessageSystem, "r", cairn.MessageSystem{Text: "hi"}),
		cairn.MustEvent(cairn.KindMessageUser, "r", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "yo"}}}))
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Seq != 1 || evs[1].Seq != 2 || m.LastSeq() != 2 {
		t.Fatalf("seqs %d %d last %d, want 1 2 2", evs[0].Seq, evs[1].Seq, m.LastSeq())
	}
	bad := cairn.Event{Kind: "nope", Data: []byte(`{}`)}
	if _, err := m.Add(bad); !errors.Is(err, cairn.ErrInvalidEvent) {
		t.Fatalf("Add of an unknown kind: got %v, want ErrInvalidEvent", err)
	}
	if m.Len() != 2 {
		t.Fatalf("a refused Add changed the memory: %d events", m.Len())
	}
}
