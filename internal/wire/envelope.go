package wire

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Envelope is an event as it is written and read: its envelope's members,
// with the data as raw JSON.
type Envelope struct {
	V    int
	Seq  int64
	At   time.Time
	Kind string
	Run  string
	Data []byte
}

// AppendEnvelope is driver.AppendEnvelope: its doc comment tells the form.
// Its one error, a time RFC 3339 cannot write, says only that.
func AppendEnvelope(dst []byte, e Envelope) ([]byte, error) {
	start := len(dst)
	dst = slices.Grow(dst, len(e.Data)+len(e.Kind)+len(e.Run)+envelopeOverhead)
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(e.V), 10)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"at":"`...)
	b, err := e.At.UTC().AppendText(dst)
	if err != nil {
		return dst[:start], fmt.Errorf("seq %d: time \"at\": %v", e.Seq, err)
	}
	dst = append(b, `","kind":`...)
	dst = appendJSONString(dst, e.Kind)
	dst = append(dst, `,"run":`...)
	dst = appendJSONString(dst, e.Run)
	dst = append(dst, `,"data":`...)
	if len(e.Data) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = appendCompact(dst, e.Data)
	}
	return append(dst, '}'), nil
}

// envelopeOverhead is what an envelope takes beyond its data, kind and
// run when they need no escapes, with a V of one digit, a SEQ of up to ten
// and a time of up to 30 bytes (all times in UTC are): the room
// AppendEnvelope makes at once. Longer envelopes grow the buffer as they
// are written.
const envelopeOverhead = len(`{"v":,"seq":,"at":"","kind":"","run":"","data":}`) + 1 + 10 + 30

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it with HTML escaping off.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendCompact appends the JSON value data without the white space
// outside its strings. It runs through strings to their closing quote with
// bytes.IndexByte, so text costs little more than a copy.
func appendCompact(dst, data []byte) []byte {
	start := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			dst = append(dst, data[start:i]...)
			start = i + 1
		case '"':
			i = stringEnd(data, i+1)
		}
	}
	return append(dst, data[start:]...)
}

// stringEnd returns the index of the quote that ends the JSON string whose
// first byte after the opening quote is at i, or len(data) when none does.
func stringEnd(data []byte, i int) int {
	for from := i; ; {
		j := bytes.IndexByte(data[from:], '"')
		if j < 0 {
			return len(data)
		}
		j += from
		k := j // the quote is escaped when an odd number of backslashes leads to it
		for k > i && data[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j
		}
		from = j + 1
	}
}

// ParseEnvelope is driver.ParseEnvelope: its doc comment tells what it
// reads.
func ParseEnvelope(line []byte) (Envelope, bool) {
	d := NewDecoder(line)
	defer d.Free()
	env, fe := ReadEnvelope(d)
	if fe != nil || !d.End() || env.null || !env.exact || env.E.V < 0 || env.E.Seq < 0 || env.E.Data[0] != '{' {
		return env.E, false
	}
	// The members in order, without white space: the line is as long as
	// its names, punctuation and values.
	n := len(`{"v":,"seq":,"at":,"kind":,"run":,"data":}`)
	for _, r := range env.raw {
		n += len(r)
	}
	return env.E, n == len(line)
}

// Read is an event envelope as read, with where its data begins.
type Read struct {
	E       Envelope
	DataOff int64     // offset of the data's value in the input
	null    bool      // a member was null
	exact   bool      // the members came in envelopeFields order, at, kind and run without escapes
	raw     [6][]byte // each member's value as it is in the input
}

// The members of an envelope, in the order json.Marshal writes them; all
// are required.
var envelopeFields = [...]string{"v", "seq", "at", "kind", "run", "data"}

// ReadEnvelope reads one event envelope from d. As encoding/json did, a
// null member leaves its field at the zero value (the checks that follow
// refuse it where that matters). Errors carry offsets into d's input.
func ReadEnvelope(d *Decoder) (Read, *FieldError) {
	var env Read
	e := &env.E
	if k := d.PeekKind(); k != '{' {
		fe := &FieldError{Msg: "an event must be a JSON object", Offset: d.InputOffset()}
		if k == 0 {
			_, fe.Err = d.ReadToken()
		}
		return env, fe
	}
	if _, err := d.ReadToken(); err != nil {
		return env, DecodeError(err)
	}
	var seen uint8
	env.exact = true
	for n := 0; d.PeekKind() != '}'; n++ {
		name, off, err := d.Name()
		if err != nil {
			return env, DecodeError(err)
		}
		raw, err := d.ReadValue()
		if err != nil {
			return env, DecodeError(err)
		}
		i := envelopeField(name)
		if i < 0 {
			return env, &FieldError{Field: string(name), Msg: "unknown field", Offset: off}
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
		var fe *FieldError
		switch i {
		case 0:
			var v int64
			v, fe = envInt(raw, "v", "int", off)
			if fe == nil && (v > math.MaxInt || v < math.MinInt) {
				fe = &FieldError{Field: "v", Msg: fmt.Sprintf("is %d, out of range", v), Offset: off}
			}
			e.V = int(v)
		case 1:
			e.Seq, fe = envInt(raw, "seq", "int64", off)
		case 2:
			if raw.Kind() != '"' {
				fe = typeError("at", raw, "time.Time", off)
			} else if err := e.At.UnmarshalJSON(raw); err != nil {
				fe = &FieldError{Field: "at", Msg: "is not an RFC 3339 time: " + err.Error(), Offset: off, Err: err}
			}
		case 3:
			var s string
			s, fe = envString(raw, "kind", off)
			e.Kind = s
		case 4:
			e.Run, fe = envString(raw, "run", off)
		case 5:
			e.Data, env.DataOff = []byte(raw), d.InputOffset()-int64(len(raw))
		}
		if fe != nil {
			return env, fe
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return env, DecodeError(err)
	}
	for i, name := range envelopeFields {
		if seen&(1<<i) == 0 {
			return env, &FieldError{Field: name, Msg: "is missing", Offset: -1}
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

func typeError(field string, raw []byte, goType string, off int64) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf("has a %s where a %s belongs", KindName(ValueKind(raw)), goType), Offset: off}
}

// envInt reads a whole number that fits an int64.
func envInt(raw []byte, field, goType string, off int64) (int64, *FieldError) {
	if ValueKind(raw) != '0' {
		return 0, typeError(field, raw, goType, off)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, &FieldError{Field: field, Msg: fmt.Sprintf("has the number %s where a %s belongs", raw, goType), Offset: off, Err: err}
	}
	return n, nil
}

// envString reads a string (already checked by the decoder: valid UTF-8,
// valid escapes).
func envString(raw []byte, field string, off int64) (string, *FieldError) {
	if raw[0] != '"' {
		return "", typeError(field, raw, "string", off)
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := Unmarshal(raw, &s); err != nil {
		return "", &FieldError{Field: field, Msg: "is not a valid string: " + ErrText(err), Offset: off, Err: err}
	}
	return s, nil
}
