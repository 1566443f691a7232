package file

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"

	"github.com/cairnhq/cairn"
)

// Each line of the log starts with a checksum of its event:
//
//	{"crc32c":"1a2b3c4d","v":1,"seq":7,"at":"…","kind":"…","run":"…","data":{…}}
//
// eight lowercase hex digits of the CRC-32C (Castagnoli) of the envelope
// without that field ({"v":1,…}, without the continued mark and the
// newline). A byte changed anywhere in the line fails the check on read.
// Lines written before the checksum existed start with {"v": and are read
// as before, without it; such a line after one with a checksum is damage,
// since the store never writes one. A version of cairn without the
// checksum still reads the new lines (json.Unmarshal ignores the field).
const (
	sumPrefix = `{"crc32c":"`
	sumLen    = len(sumPrefix) + 8 + 2 // the prefix, the digits, `",`
	oldPrefix = `{"v":`
)

var openBrace = []byte{'{'}

// envelopeSum is the CRC-32C of the envelope "{" + rest.
func envelopeSum(rest []byte) uint32 {
	return crc32.Update(crc32.Checksum(openBrace, castagnoli), castagnoli, rest)
}

// seal fills the sumLen bytes at b[start:], left for it, with the checksum
// of the envelope that b[start+sumLen:] is without its "{".
func seal(b []byte, start int) {
	copy(b[start:], sumPrefix)
	v := envelopeSum(b[start+sumLen:])
	const digits = "0123456789abcdef"
	for i := range 8 {
		b[start+len(sumPrefix)+i] = digits[v>>uint(28-4*i)&0xf]
	}
	copy(b[start+sumLen-2:], `",`)
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

// lineState is what checkLine found.
type lineState int

const (
	lineSealed lineState = iota // a line with a checksum that matches
	lineOld                     // a line written before checksums
	lineBad                     // neither: damaged, or torn by a crash
)

// checkLine checks a log line (without its continued mark and newline).
// For a bad line it says what is wrong.
func checkLine(line []byte) (lineState, error) {
	switch {
	case bytes.HasPrefix(line, []byte(sumPrefix)):
		if len(line) < sumLen+2 || string(line[sumLen-2:sumLen]) != `",` {
			return lineBad, errSumField
		}
		want, ok := parseHex8(line[len(sumPrefix) : sumLen-2])
		if !ok {
			return lineBad, errSumField
		}
		if envelopeSum(line[sumLen:]) != want {
			return lineBad, errSumMismatch
		}
		return lineSealed, nil
	case bytes.HasPrefix(line, []byte(oldPrefix)):
		return lineOld, nil
	}
	return lineBad, errNotALine
}

// parseLine checks a log line (without its continued mark and newline)
// and decodes it. The event's data aliases line. For a sealed line the
// envelope is decoded in place: the byte before it becomes "{" while it
// is read, and is put back.
func parseLine(line []byte) (cairn.Event, lineState, error) {
	st, why := checkLine(line)
	env := line
	switch st {
	case lineBad:
		return cairn.Event{}, st, why
	case lineSealed:
		env = line[sumLen-1:]
		env[0] = '{'
		defer func() { env[0] = ',' }()
	}
	e, ok := cairn.ParseEnvelope(env)
	if !ok {
		e = cairn.Event{}
		if err := json.Unmarshal(env, &e); err != nil {
			return cairn.Event{}, lineBad, fmt.Errorf("%w: %v", errCorrupt, err)
		}
	}
	return e, st, nil
}

var (
	errSumField    = fmt.Errorf("%w: the line's checksum field is malformed", errCorrupt)
	errSumMismatch = fmt.Errorf("%w: checksum mismatch: the line was changed after it was written", errCorrupt)
	errNotALine    = fmt.Errorf("%w: the line does not start as the store writes lines", errCorrupt)
)

// envelopeOf returns a line's envelope without checking it, for comparing
// lines: the line from its envelope's first field on, without the "{".
func envelopeOf(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte(" "))
	if bytes.HasPrefix(line, []byte(sumPrefix)) && len(line) >= sumLen {
		return line[sumLen:]
	}
	return bytes.TrimPrefix(line, openBrace)
}
