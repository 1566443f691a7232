//go:build linux || darwin

package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/envsum"
)

// encodeEvents returns the lines of one append: each event's envelope as
// driver.AppendEnvelope writes it, led by its checksum.
//
// The log holds one event envelope per line, led by its checksum (see
// checksum.go and package envsum). The events of one Append are written
// together; every line of an append but its last ends with a space before
// the newline ("continued"), so that recovery can tell a whole append from
// the start of one that a crash cut short.
func encodeEvents(events []cairn.Event) ([]byte, error) {
	n := 0
	for _, e := range events {
		n += len(e.Data) + len(e.Kind) + len(e.Run) + 112 + sumLen
	}
	buf := make([]byte, 0, n)
	for i, e := range events {
		var err error
		if buf, err = envsum.Append(buf, e); err != nil {
			return nil, err
		}
		if i < len(events)-1 {
			buf = append(buf, ' ')
		}
		buf = append(buf, '\n')
	}
	return buf, nil
}

// appendString appends s as a JSON string: as is when it holds only
// printable ASCII that needs no escape, through encoding/json otherwise.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(buf, q...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// errCorrupt marks a log that is damaged before its end, which recovery
// must not cut away.
var errCorrupt = errors.New("corrupt event log")

// scanTail reads log bytes that no info covers, whose first event must have
// seq next. It returns the events of the whole appends at their start and
// the bytes those take. What follows them is a torn append (lines of an
// append without its last, an incomplete line, an unreadable line) unless a
// readable event line comes after an unreadable one or has the wrong seq:
// that is corruption, not a crash, and an error. A line is readable when
// it checks (checkLine) and decodes.
func scanTail(buf []byte, next int64) ([]cairn.Event, int, error) {
	var (
		evs       []cairn.Event
		committed int // bytes of whole appends
		whole     int // events of whole appends
		pos       int
	)
	for {
		i := bytes.IndexByte(buf[pos:], '\n')
		if i < 0 {
			return evs[:whole], committed, nil // an incomplete line, or none
		}
		line := buf[pos : pos+i]
		e, ok := readLine(line)
		if !ok {
			if readableAfter(buf[pos+i+1:]) {
				return nil, 0, fmt.Errorf("%w: unreadable line before seq %d is followed by more events", errCorrupt, next)
			}
			return evs[:whole], committed, nil
		}
		if e.Seq != next {
			return nil, 0, fmt.Errorf("%w: seq %d where %d comes next", errCorrupt, e.Seq, next)
		}
		evs = append(evs, e)
		next++
		pos += i + 1
		if !bytes.HasSuffix(line, []byte(" ")) {
			committed, whole = pos, len(evs)
		}
	}
}

// readLine checks and decodes one log line.
func readLine(line []byte) (cairn.Event, bool) {
	e, st, _ := parseLine(bytes.TrimSuffix(line, []byte(" ")))
	return e, st != lineBad
}

// readableAfter reports whether any complete line of buf is an event.
func readableAfter(buf []byte) bool {
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return false
		}
		if _, ok := readLine(buf[:i]); ok {
			return true
		}
		buf = buf[i+1:]
	}
}

// decodeLog decodes the committed log buf, skipping the events before seq
// from without decoding them, and checks each line it decodes (checkLine).
// The events' data alias buf. buf is the whole log, or its end from the
// line of seq first on (readTail): a line without a checksum after lines
// with one is then found among the lines read.
func decodeLog(buf []byte, first, from int64) ([]cairn.Event, error) {
	var (
		evs    []cairn.Event
		sealed bool // a line with a checksum was read
	)
	for seq := first; len(buf) > 0; seq++ {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return nil, &lineError{seq, fmt.Errorf("%w: the line has no end", errCorrupt)}
		}
		line := buf[:i]
		buf = buf[i+1:]
		if seq < from {
			continue
		}
		e, st, err := parseLine(bytes.TrimSuffix(line, []byte(" ")))
		switch {
		case err != nil:
			return nil, &lineError{seq, err}
		case st == lineOld && sealed:
			return nil, &lineError{seq, fmt.Errorf("%w: a line without a checksum after lines with one", errCorrupt)}
		}
		sealed = sealed || st == lineSealed
		if e.Seq != seq {
			return nil, &lineError{seq, fmt.Errorf("%w: the line says seq %d", errCorrupt, e.Seq)}
		}
		evs = append(evs, e)
	}
	return evs, nil
}

// lineError is damage found in the log at one event's line.
type lineError struct {
	seq int64
	err error
}

func (e *lineError) Error() string { return fmt.Sprintf("seq %d: %v", e.seq, e.err) }
func (e *lineError) Unwrap() error { return e.err }
