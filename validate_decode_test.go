package cairn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/wire"
)

// decodeSeeds are data of every kind, valid and not: escapes, nulls, odd
// numbers, repeated, unknown and case-folded names, invalid UTF-8, white
// space, at the top level and below it.
var decodeSeeds = []struct {
	kind Kind
	data string
}{
	{KindModelResponse, `{"text":"Hi.\nTwo \"lines\" \u00e9 \u2713 \/","tool_calls":[{"id":"c1","name":"calc","args":{"expression":"2*(3+4)"}}],"model":"m","usage":{"input_tokens":12,"output_tokens":7},"finish_reason":"tool_calls","latency_ms":3}`},
	{KindModelResponse, ` { "text" : "" , "tool_calls" : [ ] , "model" : "" , "usage" : { } , "finish_reason" : "" , "latency_ms" : -0 } `},
	{KindModelResponse, `{"text":"a","tool_calls":null,"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[{"id":"c","name":"n","args":null}],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[{"id":"c","name":"n","args":1 }],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[{"ID":"c","name":"n"}],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[],"model":"","usage":{"input_tokens":1.0},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[],"model":"","usage":{"input_tokens":1e2},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[],"model":"","usage":{"input_tokens":null},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":99999999999999999999}`},
	{KindModelResponse, `{"text":"\ud83d\ude00","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"\ud83d","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, "{\"text\":\"\xff\",\"tool_calls\":[],\"model\":\"\",\"usage\":{},\"finish_reason\":\"\",\"latency_ms\":0}"},
	{KindModelResponse, `{"text":"a","text":"b","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[],"model":"","usage":{"input_tokens":1,"input_tokens":2},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[{"id":"c","name":"n","args":{"a":1,"a":2}}],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, "{\"text\":\"a\",\"tool_calls\":[{\"id\":\"c\",\"name\":\"n\",\"args\":{\"a\":\"\xc3\"}}],\"model\":\"\",\"usage\":{},\"finish_reason\":\"\",\"latency_ms\":0}"},
	{KindModelResponse, `{"text":"a","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0,"x":1}`},
	{KindModelResponse, `{"text":"a","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0} x`},
	{KindModelResponse, `{"text":"a","tool_calls":[{"id":"c","name":"n","args":{"a":[1,{"b":"}"}]}}],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[{"id":"c","name":"n","args":{"a":}}],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":null,"tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"TEXT":"a","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[],"model":"","usage":{"Input_Tokens":3},"finish_reason":"","latency_ms":0}`},
	{KindToolResult, `{"call_id":"c1","name":"calc","output":"14","is_error":false,"duration_ms":1}`},
	{KindToolResult, `{"call_id":"c1","name":"calc","output":"14","is_error":true,"duration_ms":01}`},
	{KindToolResult, `{"call_id":"","name":"calc","output":"14","is_error":true,"duration_ms":1}`},
	{KindToolResult, `{"call_id":"c","name":"calc","output":"tab\there","is_error":null,"duration_ms":1}`},
	{KindToolResult, "{\"call_id\":\"c\",\"name\":\"calc\",\"output\":\"raw\ttab\",\"is_error\":false,\"duration_ms\":1}"},
	{KindToolStarted, `{"call_id":"c1","name":"append_file","args":{"path":"/tmp/x","line":"h\u00e9llo \"q\""}}`},
	{KindToolStarted, `{"call_id":"c1","name":"append_file","args":"x"}`},
	{KindMessageSystem, `{"text":"You are careful."}`},
	{KindMessageSystem, `{"te\u0078t":"You are careful."}`},
	{KindMessageSystem, `{"text":"You are careful.","text":"EVIL"}`},
	{KindMessageSystem, `{"text":"You are careful.","te\u0078t":"EVIL"}`},
	{KindMessageUser, `{"parts":[{"type":"text","text":"hi"},{"type":"image","mime":"image/png","url":"https://x/y.png"}]}`},
	{KindMessageUser, `{"parts":[{"type":"file","data":"aGk="}]}`},
	{KindMessageUser, `{"parts":[{"type":"file","data":"aG\nk="}]}`},
	{KindMessageUser, `{"parts":[{"type":"file","data":"aGk"}]}`},
	{KindMessageUser, `{"parts":[{"text":"hi"}]}`},
	{KindMessageUser, `{"parts":[{"type":"text","text":"hi","text":"EVIL"}]}`},
	{KindMessageUser, `{"parts":[{"Type":"text","text":"hi"}]}`},
	{KindMessageUser, `{"parts":[]}`},
	{KindRunStarted, `{"run_id":"r","agent":"a","fingerprint":{"model":"m","instructions":"i","tools":"t"},"model":"m","reset":true}`},
	{KindRunStarted, `{"run_id":"r","agent":"a","fingerprint":{"Model":"m"},"model":"m","reset":true}`},
	{KindStateSet, `{"set":{"a":1,"b":{"c":[true]}},"deleted":["x"]}`},
	{KindStateSet, `{"set":{"a":1,"a":2},"deleted":[]}`},
	{KindStateSet, `{"set":null,"deleted":null}`},
	{KindRunInterrupted, `{"reason":"approval","pending":[{"id":"c","name":"n","args":{}}]}`},
	{KindApprovalDecided, `{"call_id":"c","approved":true,"note":""}`},
	{KindRunFinished, `{"status":"failed","output":"","error":{"code":"x","message":"y"}}`},
	{KindRunFinished, `{"status":"completed","output":"","error":null}`},
	{KindMemoryCompacted, `{"summary":"s","up_to":3}`},
	{KindMemoryReset, `{}`},
	{KindMemoryReset, `{"x":1}`},
	{KindCustom, `{"type":"app.step","payload":{"q":"go","n":[1,2]}}`},
	{KindCustom, `{"type":"app.step","payload":{"q":"go","q":"stop"}}`},
}

var decodeKinds = slices.Sorted(func(yield func(Kind) bool) {
	for k := range kindSpecs {
		if !yield(k) {
			return
		}
	}
})

// refDecode decodes data the way cairn did before its strict decoder, with
// encoding/json: the top-level keys checked against the kind's fields
// (unknown fields, nulls where null is not allowed, missing required
// fields; of a key given twice the last counts), then the value decoded
// with DisallowUnknownFields (which matches names regardless of case),
// then the kind's own checks. It is the reference the decoder is held to.
func refDecode(kind Kind, data []byte) (any, error) {
	spec := kindSpecs[kind]
	if !json.Valid(data) {
		return nil, errors.New("not valid JSON")
	}
	type key struct {
		name string
		null bool
	}
	var keys []key
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		keys = append(keys, key{tok.(string), string(raw) == "null"})
	}
	for i, k := range keys {
		j := slices.IndexFunc(spec.fields, func(f specField) bool { return f.name == k.name })
		if j < 0 {
			return nil, fmt.Errorf("unknown field %q", k.name)
		}
		f := spec.fields[j]
		last := !slices.ContainsFunc(keys[i+1:], func(o key) bool { return o.name == k.name })
		if k.null && f.required && !f.nullable && last {
			return nil, fmt.Errorf("field %q is null", k.name)
		}
	}
	for _, f := range spec.fields {
		if f.required && !slices.ContainsFunc(keys, func(k key) bool { return k.name == f.name }) {
			return nil, fmt.Errorf("field %q is missing", f.name)
		}
	}
	v := reflect.New(spec.typ)
	dec = json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v.Interface()); err != nil {
		return nil, err
	}
	return checked(v.Interface())
}

// narrowing reports whether the decoder's refusal err of data that the
// reference accepted is one of the refusals it was made to add: a name
// twice in one object, invalid UTF-8 or an escaped lone surrogate
// (anywhere), a member name that encoding/json matched only by folding
// case, base64 that breaks RFC 4648 (line breaks, missing padding).
func narrowing(data []byte, err error) bool {
	if !wire.ValidJSON(data) {
		return true // duplicate names or invalid UTF-8: RFC 7493 refuses it
	}
	fe, ok := errors.AsType[*wire.FieldError](err)
	if !ok {
		return false
	}
	if fe.Msg == "unknown field" {
		name := fe.Field[strings.LastIndexByte(fe.Field, '.')+1:]
		return slices.ContainsFunc(allFieldNames, func(f string) bool { return f != name && strings.EqualFold(f, name) })
	}
	return strings.Contains(fe.Msg, "[]uint8 belongs") // base64 of Part.data
}

// allFieldNames are the JSON names of every field of every kind's data,
// at every level.
var allFieldNames = func() []string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			if t.Elem().Kind() != reflect.Uint8 {
				walk(t.Elem())
			}
		case reflect.Struct:
			for i := range t.NumField() {
				name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
				names = append(names, name)
				walk(t.Field(i).Type)
			}
		}
	}
	for _, s := range kindSpecs {
		walk(s.typ)
	}
	return names
}()

// checkDecode holds the decoder of kind to the reference on data: what it
// accepts the reference accepts with an equal value; what the reference
// accepts it accepts too, unless the refusal is a narrowing; what it
// accepts encodes (as cairn writes data) to JSON that it decodes and
// encodes again to the same bytes. It reports whether the decoder accepted data.
func checkDecode(t *testing.T, kind Kind, data []byte) bool {
	t.Helper()
	got, err := kindSpecs[kind].decode(data)
	want, rerr := refDecode(kind, data)
	switch {
	case err == nil && rerr != nil:
		t.Errorf("%s %q: accepted what encoding/json refuses: %v", kind, data, rerr)
	case err == nil && !reflect.DeepEqual(got, want):
		t.Errorf("%s %q:\ndecoded   %#v\nreference %#v", kind, data, got, want)
	case err != nil && rerr == nil && !narrowing(data, err):
		t.Errorf("%s %q: refused what encoding/json accepts, and not for a duplicate name, invalid UTF-8, a case-folded name or bad base64: %v", kind, data, err)
	}
	if err != nil {
		if _, ok := errors.AsType[*wire.FieldError](err); !ok {
			t.Errorf("%s %q: the error is %T, not a *wire.FieldError: %v", kind, data, err, err)
		}
		return false
	}
	again, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s %q: encode: %v", kind, data, err)
	}
	back, err := kindSpecs[kind].decode(again)
	if err != nil {
		t.Fatalf("%s %q: what cairn writes for it, %s, does not decode: %v", kind, data, again, err)
	}
	if twice, _ := json.Marshal(back); !bytes.Equal(twice, again) {
		t.Errorf("%s %q: encoding is not stable over a decode: %s, then %s", kind, data, again, twice)
	}
	return true
}

func TestKindSpec_DecodeAgreesWithReference(t *testing.T) {
	accepted := 0
	for _, s := range decodeSeeds {
		if checkDecode(t, s.kind, []byte(s.data)) {
			accepted++
		}
	}
	if accepted < 20 {
		t.Errorf("the decoder took %d of the %d seeds; want at least the 20 plain ones", accepted, len(decodeSeeds))
	}
}

// TestKindSpec_DecodeRefuses checks the refusals the strict decoder added,
// each with the field that names where.
func TestKindSpec_DecodeRefuses(t *testing.T) {
	for _, c := range []struct {
		kind  Kind
		data  string
		field string
		msg   string
	}{
		{KindMessageSystem, `{"text":"You are careful.","text":"EVIL"}`, "text", "appears twice"},
		{KindMessageSystem, `{"text":"a","te\u0078t":"EVIL"}`, "text", "appears twice"},
		{KindMessageUser, `{"parts":[{"type":"text","text":"hi","text":"EVIL"}]}`, "parts.0.text", "appears twice"},
		{KindModelResponse, `{"text":"a","tool_calls":[{"id":"c","name":"n","args":{"a":1,"a":2}}],"model":"","usage":{},"finish_reason":"","latency_ms":0}`, "tool_calls.0.args.a", "appears twice"},
		{KindStateSet, `{"set":{"k":1,"k":2},"deleted":[]}`, "set.k", "appears twice"},
		{KindMessageSystem, "{\"text\":\"caf\xe9\"}", "text", "not valid UTF-8"},
		{KindCustom, "{\"type\":\"a.b\",\"payload\":{\"q\":[\"\xff\"]}}", "payload.q.0", "not valid UTF-8"},
		{KindMessageSystem, `{"text":"\ud800"}`, "text", "surrogate"},
		{KindRunStarted, `{"run_id":"r","agent":"a","fingerprint":{"Model":"m"},"model":"m","reset":true}`, "fingerprint.Model", "unknown field"},
	} {
		_, err := kindSpecs[c.kind].decode([]byte(c.data))
		fe, ok := errors.AsType[*wire.FieldError](err)
		if !ok || fe.Field != c.field || !strings.Contains(fe.Msg, c.msg) || fe.Offset < 0 {
			t.Errorf("%s %q: got %#v, want field %q, a message with %q and an offset", c.kind, c.data, err, c.field, c.msg)
		}
	}
}

// FuzzKindSpec_Decode holds the decoder to the encoding/json reference on
// arbitrary data of every kind; see checkDecode. Run with
//
//	go test -run XXX -fuzz FuzzKindSpec_Decode -fuzztime 5m .
func FuzzKindSpec_Decode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add(uint8(slices.Index(decodeKinds, s.kind)), []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		checkDecode(t, decodeKinds[int(k)%len(decodeKinds)], data)
	})
}

// envelopeMembers are an envelope's members, all required.
var envelopeMembers = [...]string{"v", "seq", "at", "kind", "run", "data"}

// parseEnvelope is wire.ParseEnvelope, giving an Event.
func parseEnvelope(line []byte) (Event, bool) {
	w, ok := wire.ParseEnvelope(line)
	return eventOf(w), ok
}

// refEnvelope decodes an envelope the way cairn did before: encoding/json,
// all six members required and no other.
func refEnvelope(line []byte) (Event, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil || fields == nil {
		return Event{}, errors.New("not an object")
	}
	for k := range fields {
		if !slices.Contains(envelopeMembers[:], k) {
			return Event{}, fmt.Errorf("unknown field %q", k)
		}
	}
	for _, k := range envelopeMembers {
		if _, ok := fields[k]; !ok {
			return Event{}, fmt.Errorf("field %q is missing", k)
		}
	}
	var e Event
	err := json.Unmarshal(line, &e)
	return e, err
}

// exactForm reports whether line is e as json.Marshal writes it, data
// aside (which it writes compacted and with HTML escaped).
func exactForm(e Event, line []byte) bool {
	data := e.Data
	e.Data = json.RawMessage(`{}`)
	b, err := json.Marshal(e)
	if err != nil {
		return false
	}
	want := append(b[:len(b)-3:len(b)-3], append(append([]byte{}, data...), '}')...)
	return bytes.Equal(want, line) && !bytes.ContainsAny(b[:len(b)-3], "\\")
}

// FuzzParseEnvelope holds ParseEnvelope to the encoding/json reference:
// what it accepts the reference accepts with an equal event; a valid
// envelope in the form json.Marshal writes that the reference accepts, it
// accepts too.
func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte(`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{"type":"a.b","payload":null}}`))
	f.Add([]byte(` { "seq" : 2 , "v" : 1 , "run" : "r\u00e9" , "at" : "2026-01-02T03:04:05.5+02:00" , "kind" : "message.system" , "data" : { "text" : "x" } } `))
	f.Add([]byte(`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{"type":"a.b","type":"c.d"}}`))
	f.Add([]byte(`{"v":1,"seq":1,"seq":2,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{}}`))
	f.Add([]byte("{\"v\":1,\"seq\":1,\"at\":\"2026-01-02T03:04:05Z\",\"kind\":\"custom\",\"run\":\"\xff\",\"data\":{}}"))
	f.Add([]byte(`{"v":1,"seq":1,"at":null,"kind":"custom","run":"","data":{}}`))
	f.Add([]byte(`{"v":1.0,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{}}`))
	f.Add([]byte(`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{"type":"a.b","payload":{"q":[1,{"r":"}"}]}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := parseEnvelope(line)
		want, err := refEnvelope(line)
		switch {
		case ok && err != nil:
			t.Errorf("%q: accepted what encoding/json refuses: %v", line, err)
		case ok && (got.V != want.V || got.Seq != want.Seq || !got.At.Equal(want.At) || got.Kind != want.Kind || got.Run != want.Run || !bytes.Equal(got.Data, want.Data)):
			t.Errorf("%q:\nparsed    %+v\nreference %+v", line, got, want)
		case !ok && err == nil && wire.ValidJSON(line) && want.V >= 0 && want.Seq >= 0 && bytes.HasPrefix(want.Data, []byte("{")) && exactForm(want, line):
			t.Errorf("%q: refused a valid envelope in the form json.Marshal writes", line)
		}
		if ok && !utf8.Valid(got.Data) {
			t.Errorf("%q: accepted data that is not valid UTF-8", line)
		}
	})
}

func TestParseEnvelope_Strict(t *testing.T) {
	for _, bad := range []string{
		`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{"type":"a.b","type":"c.d"}}`,
		`{"v":1,"seq":1,"seq":2,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{}}`,
		"{\"v\":1,\"seq\":1,\"at\":\"2026-01-02T03:04:05Z\",\"kind\":\"custom\",\"run\":\"\xff\",\"data\":{}}",
		"{\"v\":1,\"seq\":1,\"at\":\"2026-01-02T03:04:05Z\",\"kind\":\"custom\",\"run\":\"\",\"data\":{\"type\":\"\xff\"}}",
		`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{}} {}`,
	} {
		if _, ok := parseEnvelope([]byte(bad)); ok {
			t.Errorf("parseEnvelope(%q) accepted it", bad)
		}
	}
	_ = io.EOF
}
