package sqlite

import (
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/envsum"
)

// Each stored envelope starts with a checksum of itself (see package
// envsum): {"crc32c":"1a2b3c4d","v":1,…}, the CRC-32C of the envelope
// without that field. A byte changed anywhere in the row (in a string of
// the data, in the checksum, in the field's name) fails the check on read.
// Rows written before the checksum existed start with {"v": and are read
// as before, without it; such a row after one with a checksum is damage,
// since the store never writes one.
const sumLen = envsum.Len

// storedEvent checks and decodes one stored row. scratch is a buffer the
// caller reuses; the event's data is a copy of its own. sealed reports
// whether the row had a checksum; a row without one is refused once the
// session's rows had one (afterSealed). A row that fails is described in
// the returned message, for a *driver.DamagedError.
func storedEvent(raw []byte, scratch *[]byte, afterSealed bool) (e cairn.Event, sealed bool, msg string) {
	env := raw
	sealed, f := envsum.Check(raw)
	switch {
	case f == envsum.Field:
		return e, true, "the stored envelope's checksum field is malformed"
	case f == envsum.Mismatch:
		return e, true, "checksum mismatch: the stored envelope was changed after it was written"
	case f == envsum.Unknown && afterSealed:
		return e, false, "a stored envelope without a checksum after envelopes with one"
	case f == envsum.Unknown:
		return e, false, "the stored envelope does not start as the store writes envelopes"
	case sealed:
		b := append(append((*scratch)[:0], '{'), raw[sumLen:]...)
		*scratch = b
		env = b
	case afterSealed:
		return e, false, "a stored envelope without a checksum after envelopes with one"
	}
	e, ok := parseEnvelope(env)
	if !ok {
		// From zero: what ParseEnvelope left in e.Data aliases scratch,
		// which json.Unmarshal would decode the data into, and which the
		// next row overwrites.
		e = cairn.Event{}
		if err := json.Unmarshal(env, &e); err != nil {
			return e, sealed, fmt.Sprintf("the stored envelope does not decode: %v", err)
		}
	}
	return e, sealed, ""
}
