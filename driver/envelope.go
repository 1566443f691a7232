package driver

import (
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/wire"
)

// AppendEnvelope appends the envelope of e to dst, in the one form every
// store writes, and returns the extended buffer:
//
//	{"v":V,"seq":SEQ,"at":"AT","kind":KIND,"run":RUN,"data":DATA}
//
// with no white space outside the strings of DATA: the bytes json.Marshal
// writes for an Event, less its HTML escaping, with the time in UTC. The
// exact form of each field: docs/STORES.md, "The stored envelope".
// e.Data must be one valid JSON value (CheckAppend makes sure); the one
// error is a year outside 0 to 9999, which wraps cairn.ErrInvalidEvent and
// leaves dst as it was. With room in dst it allocates nothing.
func AppendEnvelope(dst []byte, e cairn.Event) ([]byte, error) {
	b, err := wire.AppendEnvelope(dst, wire.Envelope{V: e.V, Seq: e.Seq, At: e.At, Kind: string(e.Kind), Run: e.Run, Data: e.Data})
	if err != nil {
		return b, fmt.Errorf("%w: %v", cairn.ErrInvalidEvent, err)
	}
	return b, nil
}

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
func ParseEnvelope(line []byte) (cairn.Event, bool) {
	w, ok := wire.ParseEnvelope(line)
	return cairn.Event{V: w.V, Seq: w.Seq, At: w.At, Kind: cairn.Kind(w.Kind), Run: w.Run, Data: w.Data}, ok
}
