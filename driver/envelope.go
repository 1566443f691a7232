package driver

import (
	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/corehook"
)

var (
	appendEnvelope = corehook.AppendEnvelope.(func([]byte, cairn.Event) ([]byte, error))
	parseEnvelope  = corehook.ParseEnvelope.(func([]byte) (cairn.Event, bool))
)

// AppendEnvelope appends the envelope of e to dst, in the one form every
// store writes, and returns the extended buffer:
//
//	{"v":V,"seq":SEQ,"at":"AT","kind":KIND,"run":RUN,"data":DATA}
//
// in that order, with no white space outside the strings of DATA, where
//
//   - V and SEQ are decimal integers;
//   - AT is e.At in UTC in RFC 3339 with nanoseconds, trailing zeros of
//     the fraction left out (time.RFC3339Nano): "2026-01-02T03:04:05.12Z";
//   - KIND and RUN are JSON strings escaped as encoding/json escapes them
//     with HTML escaping off: `"`, `\` and the control characters
//     (\b \f \n \r \t, the others as \u00XX), U+2028 and U+2029 as
//     \u2028 and \u2029, invalid UTF-8 as \ufffd; <, > and & and all other
//     UTF-8 are written as they are;
//   - DATA is e.Data with the white space outside its strings removed,
//     every other byte as given (escapes inside strings included), or null
//     when e.Data is empty.
//
// These are the bytes json.Marshal writes for an Event, less its HTML
// escaping and with the time in UTC. ParseEnvelope reads them in one pass
// (kind and run without escapes; others take its fallback).
//
// e.Data must be one valid JSON value, as CheckAppend makes sure; the
// encoder does not check it again. The one error is a time whose year is
// outside 0 to 9999, which RFC 3339 cannot write; it wraps
// cairn.ErrInvalidEvent, and dst comes back as it was. Appending to a
// buffer with room for the envelope allocates nothing; with a nil dst, it
// allocates once.
func AppendEnvelope(dst []byte, e cairn.Event) ([]byte, error) { return appendEnvelope(dst, e) }

// ParseEnvelope decodes an event envelope in the exact form AppendEnvelope
// and json.Marshal write for an Event ({"v":…,"seq":…,"at":"…","kind":"…","run":"…","data":{…}}:
// that member order, no white space outside the data, no escapes in at,
// kind and run), in one pass, with the decoder every event goes through:
// the data must be a JSON object with no name twice in any of its objects
// and valid UTF-8 throughout. Data aliases line. It reports false for
// anything else, which the caller then decodes another way (json.Unmarshal
// into a cairn.Event) or refuses; the data's fields are checked by
// Event.Decode. Stores use it to load histories at the speed of reading
// them.
func ParseEnvelope(line []byte) (cairn.Event, bool) { return parseEnvelope(line) }
