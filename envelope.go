package cairn

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// ParseEnvelope decodes an event envelope in the exact form json.Marshal
// writes for an Event ({"v":…,"seq":…,"at":"…","kind":"…","run":"…","data":{…}}
// with no escapes in the strings), in one pass, checking that the data is
// valid JSON. Data aliases line. It reports false for anything else
// (escaped strings, another field order, white space), which the caller
// then decodes with json.Unmarshal or refuses. Stores use it to load
// histories at the speed of reading them.
func ParseEnvelope(line []byte) (Event, bool) {
	var e Event
	rest := line
	num := func(prefix string) (int64, bool) {
		r, ok := bytes.CutPrefix(rest, []byte(prefix))
		if !ok {
			return 0, false
		}
		i := bytes.IndexByte(r, ',')
		if i <= 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(string(r[:i]), 10, 64)
		rest = r[i:]
		return n, err == nil && (r[0] >= '1' && r[0] <= '9' || r[0] == '0' && i == 1)
	}
	str := func(prefix string) ([]byte, bool) {
		r, ok := bytes.CutPrefix(rest, []byte(prefix+`"`))
		if !ok {
			return nil, false
		}
		i := bytes.IndexByte(r, '"')
		if i < 0 || bytes.IndexFunc(r[:i], func(c rune) bool { return c == '\\' || c < 0x20 }) >= 0 {
			return nil, false
		}
		rest = r[i+1:]
		return r[:i], true
	}
	v, ok := num(`{"v":`)
	if !ok || v < 0 || v > 1<<31 {
		return e, false
	}
	e.V = int(v)
	if e.Seq, ok = num(`,"seq":`); !ok {
		return e, false
	}
	at, ok := str(`,"at":`)
	if !ok || e.At.UnmarshalJSON(append(append([]byte{'"'}, at...), '"')) != nil {
		return e, false
	}
	kind, ok := str(`,"kind":`)
	if !ok || !utf8.Valid(kind) {
		return e, false
	}
	run, ok := str(`,"run":`)
	if !ok || !utf8.Valid(run) {
		return e, false
	}
	data, ok := bytes.CutPrefix(rest, []byte(`,"data":`))
	if !ok || !bytes.HasSuffix(data, []byte("}")) {
		return e, false
	}
	data = bytes.TrimRight(data[:len(data)-1], " \t\r\n")
	if len(data) == 0 || data[0] != '{' || !json.Valid(data) {
		return e, false
	}
	e.Kind, e.Run, e.Data = Kind(kind), string(run), data
	return e, true
}
