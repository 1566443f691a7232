package cairn

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// ParseEnvelope decodes an event envelope in the exact form json.Marshal
// writes for an Event ({"v":…,"seq":…,"at":"…","kind":"…","run":"…","data":{…}}:
// that member order, no white space outside the data, no escapes in at,
// kind and run), in one pass, with the decoder every event goes through:
// the data must be a JSON object with no name twice in any of its objects
// and valid UTF-8 throughout. Data aliases line. It reports false for
// anything else, which the caller then decodes another way or refuses; the
// data's fields are checked by Event.Decode. Stores use it to load
// histories at the speed of reading them.
func ParseEnvelope(line []byte) (Event, bool) {
	d := newDecoder(line)
	defer d.free()
	env, fe := readEnvelope(d)
	if fe != nil || !d.end() || env.null || !env.exact || env.e.V < 0 || env.e.Seq < 0 || env.e.Data[0] != '{' {
		return env.e, false
	}
	// The members in order, without white space: the line is as long as
	// its names, punctuation and values.
	n := len(`{"v":,"seq":,"at":,"kind":,"run":,"data":}`)
	for _, r := range env.raw {
		n += len(r)
	}
	return env.e, n == len(line)
}

// envelope is an event envelope as read, with where its data begins.
type envelope struct {
	e       Event
	dataOff int64     // offset of the data's value in the input
	null    bool      // a member was null
	exact   bool      // the members came in envelopeFields order, at, kind and run without escapes
	raw     [6][]byte // each member's value as it is in the input
}

// The members of an envelope, in the order json.Marshal writes them; all
// are required.
var envelopeFields = [...]string{"v", "seq", "at", "kind", "run", "data"}

// readEnvelope reads one event envelope from d. As encoding/json did, a
// null member leaves its field at the zero value (the checks that follow
// refuse it where that matters). Errors carry offsets into d's input.
func readEnvelope(d *decoder) (envelope, *fieldError) {
	var env envelope
	e := &env.e
	if k := d.PeekKind(); k != '{' {
		fe := &fieldError{msg: "an event must be a JSON object", offset: d.InputOffset()}
		if k == 0 {
			_, fe.err = d.ReadToken()
		}
		return env, fe
	}
	if _, err := d.ReadToken(); err != nil {
		return env, decodeError(err)
	}
	var seen uint8
	env.exact = true
	for n := 0; d.PeekKind() != '}'; n++ {
		name, off, err := d.name()
		if err != nil {
			return env, decodeError(err)
		}
		raw, err := d.ReadValue()
		if err != nil {
			return env, decodeError(err)
		}
		i := envelopeField(name)
		if i < 0 {
			return env, &fieldError{field: string(name), msg: "unknown field", offset: off}
		}
		seen |= 1 << i
		env.raw[i] = raw
		if i != n || i >= 2 && i <= 4 && bytes.IndexByte(raw, '\\') >= 0 {
			env.exact = false
		}
		if raw.Kind() == 'n' {
			env.null = true
			continue
		}
		var fe *fieldError
		switch i {
		case 0:
			var v int64
			v, fe = envInt(raw, "v", "int", off)
			if fe == nil && (v > math.MaxInt || v < math.MinInt) {
				fe = &fieldError{field: "v", msg: fmt.Sprintf("is %d, out of range", v), offset: off}
			}
			e.V = int(v)
		case 1:
			e.Seq, fe = envInt(raw, "seq", "int64", off)
		case 2:
			if raw.Kind() != '"' {
				fe = typeError("at", raw, "time.Time", off)
			} else if err := e.At.UnmarshalJSON(raw); err != nil {
				fe = &fieldError{field: "at", msg: "is not an RFC 3339 time: " + err.Error(), offset: off, err: err}
			}
		case 3:
			var s string
			s, fe = envString(raw, "kind", off)
			e.Kind = Kind(s)
		case 4:
			e.Run, fe = envString(raw, "run", off)
		case 5:
			e.Data, env.dataOff = []byte(raw), d.InputOffset()-int64(len(raw))
		}
		if fe != nil {
			return env, fe
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return env, decodeError(err)
	}
	for i, name := range envelopeFields {
		if seen&(1<<i) == 0 {
			return env, &fieldError{field: name, msg: "is missing", offset: -1}
		}
	}
	if e.Data == nil {
		e.Data = []byte("null")
	}
	return env, nil
}

func envelopeField(name []byte) int {
	for i, f := range envelopeFields {
		if string(name) == f {
			return i
		}
	}
	return -1
}

func typeError(field string, raw []byte, goType string, off int64) *fieldError {
	return &fieldError{field: field, msg: fmt.Sprintf("has a %s where a %s belongs", kindName(valueKind(raw)), goType), offset: off}
}

// envInt reads a whole number that fits an int64.
func envInt(raw []byte, field, goType string, off int64) (int64, *fieldError) {
	if valueKind(raw) != '0' {
		return 0, typeError(field, raw, goType, off)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, &fieldError{field: field, msg: fmt.Sprintf("has the number %s where a %s belongs", raw, goType), offset: off, err: err}
	}
	return n, nil
}

// envString reads a string (already checked by the decoder: valid UTF-8,
// valid escapes).
func envString(raw []byte, field string, off int64) (string, *fieldError) {
	if raw[0] != '"' {
		return "", typeError(field, raw, "string", off)
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := jsonUnmarshal(raw, &s); err != nil {
		return "", &fieldError{field: field, msg: "is not a valid string: " + errText(err), offset: off, err: err}
	}
	return s, nil
}
