package cairn

// A small JSON scanner for the hot paths: finding an object's keys without
// decoding it, and one-pass decoders for the commonest kinds' data that
// accept only input they decode exactly as encoding/json would (anything
// else takes the general path in validate.go).

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// objectKey is one top-level key of a JSON object, unescaped, and whether
// its value is null.
type objectKey struct {
	name string
	null bool
}

// objectKeys lists the top-level keys of the JSON object data without
// decoding any value. It reports false when data is not an object followed
// by nothing but white space; it does not check the values' syntax, which
// the decoder that follows does.
func objectKeys(data []byte) ([]objectKey, bool) {
	l := lexer{b: data}
	if !l.next('{') {
		return nil, false
	}
	keys := make([]objectKey, 0, 8)
	if !l.next('}') {
		for {
			l.space()
			start := l.i
			if !l.skipString() || !l.next(':') {
				return nil, false
			}
			raw := data[start:l.i]
			raw = bytes.TrimRight(raw[:len(raw)-1], " \t\r\n")
			var name string
			if bytes.IndexByte(raw, '\\') < 0 {
				name = string(raw[1 : len(raw)-1])
			} else if json.Unmarshal(raw, &name) != nil {
				return nil, false
			}
			l.space()
			null := bytes.HasPrefix(data[l.i:], []byte("null"))
			if !l.skipValue() {
				return nil, false
			}
			keys = append(keys, objectKey{name, null})
			if l.next(',') {
				continue
			}
			if l.next('}') {
				break
			}
			return nil, false
		}
	}
	return keys, l.end()
}

// lexer reads JSON for the one-pass decoders. Every method reports false
// for input it does not take, and the caller then gives up: a false is not
// a verdict on the input, only a refusal to judge it here.
type lexer struct {
	b []byte
	i int
}

func (l *lexer) space() {
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case ' ', '\t', '\n', '\r':
			l.i++
		default:
			return
		}
	}
}

// next skips white space and then c, if c comes next.
func (l *lexer) next(c byte) bool {
	l.space()
	if l.i < len(l.b) && l.b[l.i] == c {
		l.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (l *lexer) end() bool {
	l.space()
	return l.i == len(l.b)
}

// skipString skips a string, escapes and all, without checking it.
func (l *lexer) skipString() bool {
	if l.i >= len(l.b) || l.b[l.i] != '"' {
		return false
	}
	for l.i++; l.i < len(l.b); l.i++ {
		switch l.b[l.i] {
		case '\\':
			l.i++
		case '"':
			l.i++
			return true
		}
	}
	return false
}

// skipValue skips one value, finding where it ends without checking it.
func (l *lexer) skipValue() bool {
	l.space()
	depth := 0
	for l.i < len(l.b) {
		switch c := l.b[l.i]; c {
		case '"':
			if !l.skipString() {
				return false
			}
		case '{', '[':
			depth++
			l.i++
		case '}', ']':
			if depth == 0 {
				return true
			}
			depth--
			l.i++
		case ',':
			if depth == 0 {
				return true
			}
			l.i++
		default:
			l.i++
		}
		if depth == 0 && l.i > 0 && (l.b[l.i-1] == '"' || l.b[l.i-1] == '}' || l.b[l.i-1] == ']') {
			return true
		}
	}
	return depth == 0
}

// key reads an object key that has no escapes and the colon after it.
func (l *lexer) key() (string, bool) {
	l.space()
	if l.i >= len(l.b) || l.b[l.i] != '"' {
		return "", false
	}
	j := bytes.IndexByte(l.b[l.i+1:], '"')
	if j < 0 {
		return "", false
	}
	k := l.b[l.i+1 : l.i+1+j]
	if bytes.IndexByte(k, '\\') >= 0 {
		return "", false
	}
	l.i += j + 2
	return string(k), l.next(':')
}

// str reads a string: valid UTF-8, no control characters, escapes other
// than lone surrogates.
func (l *lexer) str() (string, bool) {
	l.space()
	if l.i >= len(l.b) || l.b[l.i] != '"' {
		return "", false
	}
	l.i++
	start := l.i
	var buf []byte
	for l.i < len(l.b) {
		c := l.b[l.i]
		switch {
		case c == '"':
			seg := l.b[start:l.i]
			l.i++
			if !utf8.Valid(seg) {
				return "", false
			}
			if buf == nil {
				return string(seg), true
			}
			return string(append(buf, seg...)), true
		case c == '\\':
			seg := l.b[start:l.i]
			if !utf8.Valid(seg) || l.i+1 >= len(l.b) {
				return "", false
			}
			buf = append(buf, seg...)
			switch e := l.b[l.i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				if l.i+6 > len(l.b) {
					return "", false
				}
				r, err := strconv.ParseUint(string(l.b[l.i+2:l.i+6]), 16, 16)
				if err != nil || utf16.IsSurrogate(rune(r)) || l.b[l.i+2] == '+' || l.b[l.i+2] == '-' {
					return "", false
				}
				buf = utf8.AppendRune(buf, rune(r))
				l.i += 4
			default:
				return "", false
			}
			l.i += 2
			start = l.i
		case c < 0x20:
			return "", false
		default:
			l.i++
		}
	}
	return "", false
}

// int reads a whole number that fits an int64.
func (l *lexer) int() (int64, bool) {
	l.space()
	start := l.i
	if l.i < len(l.b) && l.b[l.i] == '-' {
		l.i++
	}
	digits := l.i
	for l.i < len(l.b) && l.b[l.i] >= '0' && l.b[l.i] <= '9' {
		l.i++
	}
	n := l.i - digits
	if n == 0 || n > 1 && l.b[digits] == '0' || n > 18 {
		return 0, false
	}
	if l.i < len(l.b) {
		switch l.b[l.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(l.b[start:l.i]), 10, 64)
	return v, err == nil
}

// bool reads true or false.
func (l *lexer) bool() (bool, bool) {
	l.space()
	switch {
	case bytes.HasPrefix(l.b[l.i:], []byte("true")):
		l.i += 4
		return true, true
	case bytes.HasPrefix(l.b[l.i:], []byte("false")):
		l.i += 5
		return false, true
	}
	return false, false
}

// raw reads any valid JSON value but null and returns a copy of its bytes.
func (l *lexer) raw() (json.RawMessage, bool) {
	l.space()
	start := l.i
	if start >= len(l.b) || l.b[start] == 'n' || !l.skipValue() {
		return nil, false
	}
	v := bytes.TrimRight(l.b[start:l.i], " \t\r\n")
	if !json.Valid(v) {
		return nil, false
	}
	return append(json.RawMessage(nil), v...), true
}

// object reads an object whose keys have no escapes, calling field for
// each key with the lexer at its value. Bit i of seen is set for the key
// names[i]; an unknown or repeated key stops the read.
func (l *lexer) object(names []string, field func(i int) bool) (seen uint, ok bool) {
	if !l.next('{') {
		return 0, false
	}
	if l.next('}') {
		return 0, true
	}
	for {
		k, ok := l.key()
		if !ok {
			return 0, false
		}
		i := slices.Index(names, k)
		if i < 0 || seen&(1<<i) != 0 || !field(i) {
			return 0, false
		}
		seen |= 1 << i
		if l.next(',') {
			continue
		}
		if l.next('}') {
			return seen, true
		}
		return 0, false
	}
}

// array reads an array, calling elem with the lexer at each element.
func (l *lexer) array(elem func() bool) bool {
	if !l.next('[') {
		return false
	}
	if l.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if l.next(',') {
			continue
		}
		return l.next(']')
	}
}

// top reads data as one whole object with all of names present.
func top(data []byte, names []string, field func(l *lexer, i int) bool) bool {
	l := &lexer{b: data}
	seen, ok := l.object(names, func(i int) bool { return field(l, i) })
	return ok && seen == 1<<len(names)-1 && l.end()
}

// fastDecoders are the one-pass decoders of the commonest kinds' data, by
// type. Each reports false for anything it does not decode exactly as
// encoding/json would, which sends the data the general way.
var fastDecoders = map[reflect.Type]func(data []byte) (any, bool){
	reflect.TypeFor[ModelResponse](): fastModelResponse,
	reflect.TypeFor[ToolResult]():    fastToolResult,
	reflect.TypeFor[ToolStarted]():   fastToolStarted,
	reflect.TypeFor[MessageSystem](): fastMessageSystem,
	reflect.TypeFor[MessageUser]():   fastMessageUser,
}

var modelResponseNames = []string{"text", "tool_calls", "model", "usage", "finish_reason", "latency_ms"}

func fastModelResponse(data []byte) (any, bool) {
	m := &ModelResponse{}
	ok := top(data, modelResponseNames, func(l *lexer, i int) (ok bool) {
		switch i {
		case 0:
			m.Text, ok = l.str()
		case 1:
			m.ToolCalls, ok = l.toolCalls()
		case 2:
			m.Model, ok = l.str()
		case 3:
			_, ok = l.object(usageNames, func(i int) (ok bool) {
				if i == 0 {
					m.Usage.InputTokens, ok = l.int()
				} else {
					m.Usage.OutputTokens, ok = l.int()
				}
				return ok
			})
		case 4:
			m.FinishReason, ok = l.str()
		case 5:
			m.LatencyMS, ok = l.int()
		}
		return ok
	})
	return m, ok
}

var (
	usageNames    = []string{"input_tokens", "output_tokens"}
	toolCallNames = []string{"id", "name", "args"}
)

func (l *lexer) toolCalls() ([]ToolCall, bool) {
	calls := []ToolCall{}
	ok := l.array(func() bool {
		var c ToolCall
		_, ok := l.object(toolCallNames, func(i int) (ok bool) {
			switch i {
			case 0:
				c.ID, ok = l.str()
			case 1:
				c.Name, ok = l.str()
			case 2:
				c.Args, ok = l.raw()
			}
			return ok
		})
		calls = append(calls, c)
		return ok
	})
	return calls, ok
}

var toolResultNames = []string{"call_id", "name", "output", "is_error", "duration_ms"}

func fastToolResult(data []byte) (any, bool) {
	r := &ToolResult{}
	ok := top(data, toolResultNames, func(l *lexer, i int) (ok bool) {
		switch i {
		case 0:
			r.CallID, ok = l.str()
		case 1:
			r.Name, ok = l.str()
		case 2:
			r.Output, ok = l.str()
		case 3:
			r.IsError, ok = l.bool()
		case 4:
			r.DurationMS, ok = l.int()
		}
		return ok
	})
	return r, ok
}

var toolStartedNames = []string{"call_id", "name", "args"}

func fastToolStarted(data []byte) (any, bool) {
	t := &ToolStarted{}
	ok := top(data, toolStartedNames, func(l *lexer, i int) (ok bool) {
		switch i {
		case 0:
			t.CallID, ok = l.str()
		case 1:
			t.Name, ok = l.str()
		case 2:
			t.Args, ok = l.raw()
		}
		return ok
	})
	return t, ok
}

var textNames = []string{"text"}

func fastMessageSystem(data []byte) (any, bool) {
	m := &MessageSystem{}
	ok := top(data, textNames, func(l *lexer, _ int) (ok bool) {
		m.Text, ok = l.str()
		return ok
	})
	return m, ok
}

var (
	partsNames = []string{"parts"}
	partNames  = []string{"type", "text", "mime", "url"}
)

func fastMessageUser(data []byte) (any, bool) {
	m := &MessageUser{}
	ok := top(data, partsNames, func(l *lexer, _ int) bool {
		m.Parts = []Part{}
		return l.array(func() bool {
			var p Part
			_, ok := l.object(partNames, func(i int) (ok bool) {
				switch i {
				case 0:
					p.Type, ok = l.str()
				case 1:
					p.Text, ok = l.str()
				case 2:
					p.MIME, ok = l.str()
				case 3:
					p.URL, ok = l.str()
				}
				return ok
			})
			m.Parts = append(m.Parts, p)
			return ok
		})
	})
	return m, ok
}
