//go:build linux || darwin

package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/cairnhq/cairn/driver"
)

// ackName is the session's record of what it acknowledged last: the log
// length and the last seq of its last append, rewritten in place after
// each append, as info.json is, and apart from it.
//
// The log cannot tell that its end was cut off; the records of what the
// store acknowledged can. info.json alone would be one record that a
// second fault takes with the first: with the log cut short and info.json
// damaged or deleted (which a crash of the machine can also do to it, so
// that the store passes over it), the log would read as a shorter history,
// and the next append would write new events at the lost seqs. With this
// record beside it, two damaged files never erase both: the log cut short
// and info.json gone (or rewritten to match the cut log) is found against
// ack.json, the log cut short and ack.json gone against info.json. meta.json
// is durable, but is written only at checkpoints (every 4 MiB of log), and
// the journal is emptied by each checkpoint and when the store closes:
// neither records the last append of a session.
//
// It costs an append one more write of about 60 bytes to a file the store
// keeps open, without an fsync (docs/STORES.md, "Recovery and damage").
// A session made before the record existed has no ack.json until its
// next append, and is checked against info.json and meta.json alone.
const ackName = "ack.json"

// ackRecord is what ack.json holds.
type ackRecord struct {
	LogSize int64 `json:"log_size"` // the log's length after the append
	LastSeq int64 `json:"last_seq"` // the seq of its last event
}

// ackFile is the JSON form of ack.json: the record and its CRC-32C, as in
// info.json. It is padded with spaces when its content shrinks.
type ackFile struct {
	CRC uint32          `json:"crc32c"`
	Ack json.RawMessage `json:"ack"`
}

// encodeAck writes the ackFile of a, as json.Marshal would, without
// reflection: it runs after every append.
func encodeAck(a ackRecord) []byte {
	var rec [64]byte
	r := append(rec[:0], `{"log_size":`...)
	r = strconv.AppendInt(r, a.LogSize, 10)
	r = append(r, `,"last_seq":`...)
	r = strconv.AppendInt(r, a.LastSeq, 10)
	r = append(r, '}')
	b := make([]byte, 0, len(r)+32)
	b = append(b, `{"crc32c":`...)
	b = strconv.AppendUint(b, uint64(crc32.Checksum(r, castagnoli)), 10)
	b = append(b, `,"ack":`...)
	b = append(b, r...)
	return append(b, '}')
}

// errNoAck is returned by readAck for a session that has no ack.json, or
// an empty one: nothing was recorded there yet.
var errNoAck = errors.New(ackName + ": no record")

// parseAck decodes and checks the content of ack.json.
func parseAck(data []byte) (ackRecord, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return ackRecord{}, errNoAck
	}
	var f ackFile
	if err := json.Unmarshal(data, &f); err != nil {
		return ackRecord{}, fmt.Errorf("%s: %w", ackName, err)
	}
	if crc32.Checksum(f.Ack, castagnoli) != f.CRC {
		return ackRecord{}, fmt.Errorf("%s: checksum mismatch", ackName)
	}
	var a ackRecord
	if err := json.Unmarshal(f.Ack, &a); err != nil {
		return ackRecord{}, fmt.Errorf("%s: %w", ackName, err)
	}
	if a.LogSize < 0 || a.LastSeq < 0 || (a.LogSize == 0) != (a.LastSeq == 0) {
		return ackRecord{}, fmt.Errorf("%s: log size %d and last seq %d do not go together", ackName, a.LogSize, a.LastSeq)
	}
	return a, nil
}

// readAck reads the session's ack.json. Like info.json it is written
// without an fsync, so a crash of the machine can tear it: an error here
// means the record is not there to check against, not damage.
func (s *Store) readAck(id string) (ackRecord, error) {
	data, err := s.ns.ReadFile(id + "/" + ackName)
	if err != nil {
		return ackRecord{}, errNoAck
	}
	return parseAck(data)
}

// saveAck writes ss's log length and last seq to ack.json, in place.
func (s *Store) saveAck(ss *session) error {
	data := encodeAck(ackRecord{LogSize: ss.size, LastSeq: ss.info.LastSeq})
	if n := ss.ackLen - int64(len(data)); n > 0 {
		data = append(data, bytes.Repeat([]byte{' '}, int(n))...)
	}
	if _, err := ss.ackF.WriteAt(data, 0); err != nil {
		return fmt.Errorf("write %s: %w", ackName, err)
	}
	ss.ackLen = max(ss.ackLen, int64(len(data)))
	return nil
}

// ackAgrees checks a log whose whole events take size bytes and end at
// seq last against the ack.json record a (the zero record when there is
// none to check against): fewer bytes or fewer events than the record
// says were acknowledged is damage.
func ackAgrees(id string, a ackRecord, size, last int64) error {
	switch {
	case a == ackRecord{}:
		return nil
	case size < a.LogSize:
		return &driver.DamagedError{Session: id, Where: id + "/" + logName, Msg: fmt.Sprintf(
			"its whole events end at byte %d, before the %d bytes (events to seq %d) %s says were acknowledged: "+
				"acknowledged events were cut off or changed; nothing is written to it",
			size, a.LogSize, a.LastSeq, ackName)}
	case last < a.LastSeq || (size == a.LogSize && last != a.LastSeq):
		return &driver.DamagedError{Session: id, Where: id + "/" + logName, Msg: fmt.Sprintf(
			"its %d bytes hold events to seq %d, where %s says %d bytes held events to seq %d: "+
				"acknowledged events were lost; nothing is written to it",
			size, last, ackName, a.LogSize, a.LastSeq)}
	}
	return nil
}
