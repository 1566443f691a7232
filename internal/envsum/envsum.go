// Package envsum is the checksum that leads each event envelope the file
// and SQLite stores write:
//
//	{"crc32c":"1a2b3c4d","v":1,"seq":7,"at":"…","kind":"…","run":"…","data":{…}}
//
// eight lowercase hex digits of the CRC-32C (Castagnoli) of the envelope
// without that field ({"v":1,…}, as driver.AppendEnvelope writes it). A byte
// changed anywhere in the stored envelope (in its data, its fields, the
// checksum or the field's name) fails the check on read. Envelopes stored
// before the checksum existed start with {"v": and are read without it; a
// version of cairn without the checksum still reads the new ones
// (json.Unmarshal ignores the field).
package envsum

import (
	"hash/crc32"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

const (
	// Prefix begins an envelope with its checksum.
	Prefix = `{"crc32c":"`
	// Len is the length of the checksum field: the prefix, the eight
	// digits and `",`. The envelope's own members follow it.
	Len = len(Prefix) + 8 + 2
	// OldPrefix begins an envelope written before the checksum.
	OldPrefix = `{"v":`
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Append appends the envelope of e (driver.AppendEnvelope) led by its
// checksum. On an error (the one of driver.AppendEnvelope) dst comes back
// as it was.
func Append(dst []byte, e cairn.Event) ([]byte, error) {
	start := len(dst)
	// The envelope's "{" lands where the field's "," goes: the checksum
	// is of the envelope as driver.AppendEnvelope wrote it.
	dst = append(dst, Prefix+`00000000"`...)
	b, err := driver.AppendEnvelope(dst, e)
	if err != nil {
		return dst[:start], err
	}
	v := crc32.Checksum(b[start+Len-1:], castagnoli)
	const digits = "0123456789abcdef"
	for i := range 8 {
		b[start+len(Prefix)+i] = digits[v>>uint(28-4*i)&0xf]
	}
	b[start+Len-1] = ','
	return b, nil
}

// Fault is what Check found wrong with a stored envelope.
type Fault int

const (
	OK       Fault = iota // a checksum that matches, or no checksum (an old envelope)
	Field                 // the checksum field is malformed
	Mismatch              // the checksum does not match: the envelope changed after it was written
	Unknown               // the bytes start neither with a checksum nor as an old envelope
)

// Check checks a stored envelope b (without anything a store puts around
// it, such as the file store's continued mark and newline). sealed reports
// whether b starts with a checksum field; a sealed b whose fault is OK is
// Prefix, the digits, `",` and then the members of the envelope.
func Check(b []byte) (sealed bool, f Fault) {
	switch {
	case len(b) >= len(Prefix) && string(b[:len(Prefix)]) == Prefix:
		if len(b) < Len+2 || string(b[Len-2:Len]) != `",` {
			return true, Field
		}
		want, ok := parseHex8(b[len(Prefix) : Len-2])
		if !ok {
			return true, Field
		}
		if crc32.Update(crc32.Checksum(openBrace, castagnoli), castagnoli, b[Len:]) != want {
			return true, Mismatch
		}
		return true, OK
	case len(b) >= len(OldPrefix) && string(b[:len(OldPrefix)]) == OldPrefix:
		return false, OK
	}
	return false, Unknown
}

var openBrace = []byte{'{'}

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
