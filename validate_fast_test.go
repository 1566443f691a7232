package cairn

import (
	"reflect"
	"testing"
)

// fastSeeds are data of the kinds with a one-pass decoder, valid and not:
// escapes, nulls, odd numbers, repeated and unknown keys, white space.
var fastSeeds = []struct {
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
	{KindModelResponse, `{"text":"a","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":99999999999999999999}`},
	{KindModelResponse, `{"text":"\ud83d\ude00","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"\ud83d","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, "{\"text\":\"\xff\",\"tool_calls\":[],\"model\":\"\",\"usage\":{},\"finish_reason\":\"\",\"latency_ms\":0}"},
	{KindModelResponse, `{"text":"a","text":"b","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0,"x":1}`},
	{KindModelResponse, `{"text":"a","tool_calls":[],"model":"","usage":{},"finish_reason":"","latency_ms":0} x`},
	{KindModelResponse, `{"text":"a","tool_calls":[{"id":"c","name":"n","args":{"a":[1,{"b":"}"}]}}],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindModelResponse, `{"text":"a","tool_calls":[{"id":"c","name":"n","args":{"a":}}],"model":"","usage":{},"finish_reason":"","latency_ms":0}`},
	{KindToolResult, `{"call_id":"c1","name":"calc","output":"14","is_error":false,"duration_ms":1}`},
	{KindToolResult, `{"call_id":"c1","name":"calc","output":"14","is_error":true,"duration_ms":01}`},
	{KindToolResult, `{"call_id":"","name":"calc","output":"14","is_error":true,"duration_ms":1}`},
	{KindToolResult, `{"call_id":"c","name":"calc","output":"tab\there","is_error":null,"duration_ms":1}`},
	{KindToolResult, "{\"call_id\":\"c\",\"name\":\"calc\",\"output\":\"raw\ttab\",\"is_error\":false,\"duration_ms\":1}"},
	{KindToolStarted, `{"call_id":"c1","name":"append_file","args":{"path":"/tmp/x","line":"h\u00e9llo \"q\""}}`},
	{KindToolStarted, `{"call_id":"c1","name":"append_file","args":"x"}`},
	{KindMessageSystem, `{"text":"You are careful."}`},
	{KindMessageSystem, `{"te\u0078t":"You are careful."}`},
	{KindMessageUser, `{"parts":[{"type":"text","text":"hi"},{"type":"image","mime":"image/png","url":"https://x/y.png"}]}`},
	{KindMessageUser, `{"parts":[{"type":"file","data":"aGk="}]}`},
	{KindMessageUser, `{"parts":[{"text":"hi"}]}`},
	{KindMessageUser, `{"parts":[]}`},
}

// slowDecode decodes data the general way, without the one-pass decoder.
func slowDecode(kind Kind, data []byte) (any, error) {
	spec := kindSpecs[kind]
	spec.fast = nil
	return spec.decode(data)
}

// checkFast fails t if the one-pass decoder of kind accepts data and the
// general way does not, or decodes it to a different value.
func checkFast(t *testing.T, kind Kind, data []byte) bool {
	t.Helper()
	fast, ok := kindSpecs[kind].fast(data)
	if !ok {
		return false
	}
	want, err := slowDecode(kind, data)
	if err != nil {
		if _, cerr := checked(fast); cerr == nil {
			t.Errorf("%s %q: one-pass decoder accepts what the general way refuses: %v", kind, data, err)
		}
		return true
	}
	if !reflect.DeepEqual(fast, want) {
		t.Errorf("%s %q:\none-pass %#v\ngeneral  %#v", kind, data, fast, want)
	}
	return true
}

func TestKindSpec_FastDecodeAgrees(t *testing.T) {
	accepted := 0
	for _, s := range fastSeeds {
		if checkFast(t, s.kind, []byte(s.data)) {
			accepted++
		}
	}
	if accepted < 8 {
		t.Errorf("the one-pass decoders took %d of the %d seeds; want at least the 8 plain ones", accepted, len(fastSeeds))
	}
}

func TestKindSpec_FastDecodeTakesPlainData(t *testing.T) {
	for _, s := range fastSeeds[:2] {
		if _, ok := kindSpecs[s.kind].fast([]byte(s.data)); !ok {
			t.Errorf("%s %s: the one-pass decoder refused plain data", s.kind, s.data)
		}
	}
}

func FuzzKindSpec_FastDecode(f *testing.F) {
	kinds := []Kind{KindModelResponse, KindToolResult, KindToolStarted, KindMessageSystem, KindMessageUser}
	for _, s := range fastSeeds {
		f.Add(uint8(indexOf(kinds, s.kind)), []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		checkFast(t, kinds[int(k)%len(kinds)], data)
	})
}

func indexOf(kinds []Kind, k Kind) int {
	for i, x := range kinds {
		if x == k {
			return i
		}
	}
	return 0
}
