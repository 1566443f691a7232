package sqlite

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/cairnhq/cairn"
)

// parseEnvelope decodes an envelope in the exact form envelope writes, in
// one pass over its data, which it checks is valid JSON and copies. It
// reports false for anything else (escaped strings, another field order),
// which json.Unmarshal then decodes or refuses.
func parseEnvelope(line []byte) (cairn.Event, bool) {
	var e cairn.Event
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
	e.Kind, e.Run, e.Data = cairn.Kind(kind), string(run), bytes.Clone(data)
	return e, true
}
