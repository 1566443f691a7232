package sqlite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"

	"github.com/cairnhq/cairn"
)

// Each stored envelope starts with a checksum of itself:
//
//	{"crc32c":"1a2b3c4d","v":1,"seq":7,"at":"…","kind":"…","run":"…","data":{…}}
//
// eight lowercase hex digits of the CRC-32C (Castagnoli) of the envelope
// without that field ({"v":1,…}). A byte changed anywhere in the row (in a
// string of the data, in the checksum, in the field's name) fails the
// check on read. Rows written before the checksum existed start with
// {"v": and are read as before, without it; such a row after one with a
// checksum is damage, since the store never writes one.
const (
	sumPrefix = `{"crc32c":"`
	sumLen    = len(sumPrefix) + 8 + 2 // the prefix, the digits, `",`
	oldPrefix = `{"v":`
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var openBrace = []byte{'{'}

// envelopeSum is the CRC-32C of the envelope "{" + rest.
func envelopeSum(rest []byte) uint32 {
	return crc32.Update(crc32.Checksum(openBrace, castagnoli), castagnoli, rest)
}

// seal fills the first sumLen bytes of b, which were left for it, with
// the checksum of the envelope that the rest of b is without its "{".
func seal(b []byte) []byte {
	copy(b, sumPrefix)
	appendHex8(b[len(sumPrefix):len(sumPrefix)], envelopeSum(b[sumLen:]))
	copy(b[sumLen-2:], `",`)
	return b
}

func appendHex8(b []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		b = append(b, digits[v>>uint(shift)&0xf])
	}
	return b
}

// parseHex8 reads eight lowercase hex digits.
func parseHex8(b []byte) (uint32, bool) {
	if len(b) != 8 {
		return 0, false
	}
	var v uint32
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint32(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// storedEvent checks and decodes one stored row. scratch is a buffer the
// caller reuses; the event's data is a copy of its own. sealed reports
// whether the row had a checksum; a row without one is refused once the
// session's rows had one (afterSealed). A row that fails is described in
// the returned message, for a *cairn.DamagedError.
func storedEvent(raw []byte, scratch *[]byte, afterSealed bool) (e cairn.Event, sealed bool, msg string) {
	env := raw
	switch {
	case bytes.HasPrefix(raw, []byte(sumPrefix)):
		if len(raw) < sumLen+2 || string(raw[sumLen-2:sumLen]) != `",` {
			return e, true, "the stored envelope's checksum field is malformed"
		}
		want, ok := parseHex8(raw[len(sumPrefix) : sumLen-2])
		if !ok {
			return e, true, "the stored envelope's checksum field is malformed"
		}
		if envelopeSum(raw[sumLen:]) != want {
			return e, true, "checksum mismatch: the stored envelope was changed after it was written"
		}
		b := append(append((*scratch)[:0], '{'), raw[sumLen:]...)
		*scratch = b
		env, sealed = b, true
	case afterSealed:
		return e, false, "a stored envelope without a checksum after envelopes with one"
	case !bytes.HasPrefix(raw, []byte(oldPrefix)):
		return e, false, "the stored envelope does not start as the store writes envelopes"
	}
	e, ok := parseEnvelope(env)
	if !ok {
		if err := json.Unmarshal(env, &e); err != nil {
			return e, sealed, fmt.Sprintf("the stored envelope does not decode: %v", err)
		}
	}
	return e, sealed, ""
}
