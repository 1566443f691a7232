//go:build linux || darwin

package file

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/envsum"
)

// Each line of the log starts with a checksum of its event (see package
// envsum): {"crc32c":"1a2b3c4d","v":1,…}, the CRC-32C of the envelope
// without that field, checked against the line without its continued mark
// and newline. A byte changed anywhere in the line fails the check on read.
// Lines written before the checksum existed start with {"v": and are read
// as before, without it; such a line after one with a checksum is damage,
// since the store never writes one.
const sumLen = envsum.Len

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
	sealed, f := envsum.Check(line)
	switch {
	case f == envsum.Field:
		return lineBad, errSumField
	case f == envsum.Mismatch:
		return lineBad, errSumMismatch
	case f == envsum.Unknown:
		return lineBad, errNotALine
	case sealed:
		return lineSealed, nil
	}
	return lineOld, nil
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
	e, ok := driver.ParseEnvelope(env)
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
	if bytes.HasPrefix(line, []byte(envsum.Prefix)) && len(line) >= sumLen {
		return line[sumLen:]
	}
	return bytes.TrimPrefix(line, []byte("{"))
}
