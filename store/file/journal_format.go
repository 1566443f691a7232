//go:build linux || darwin

package file

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// halfBounds returns where half i of a journal file starts, and its
// length.
func halfBounds(f *os.File, i int) (base, n int64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := fi.Size()
	if size < minJournalSize || size%2 != 0 {
		return 0, 0, fmt.Errorf("%d bytes long: not a journal of this store (move it out of %s/)", size, journalDir)
	}
	return int64(i) * (size / 2), size / 2, nil
}

// readHalf reads half i of a journal file as far as its records go: in
// growing pieces, since past its records a half is zero.
func readHalf(f *os.File, i int) ([]byte, error) {
	base, size, err := halfBounds(f, i)
	if err != nil {
		return nil, err
	}
	for n := min(size, 256<<10); ; n = min(size, 4*n) {
		buf := make([]byte, n)
		if _, err := io.ReadFull(io.NewSectionReader(f, base, n), buf); err != nil {
			return nil, err
		}
		if _, end := scanJournal(buf); n == size || !cutShort(buf, end) {
			return buf, nil
		}
	}
}

// readRecords returns the appends a journal file holds, in both halves,
// and where each half's records end.
func readRecords(f *os.File) (recs []record, used [2]int64, err error) {
	for i := range 2 {
		buf, err := readHalf(f, i)
		if err != nil {
			return nil, used, err
		}
		entries, end := scanJournal(buf)
		used[i] = int64(end)
		for _, e := range entries {
			if e.kind == recAppend {
				recs = append(recs, e.record)
			}
		}
	}
	return recs, used, nil
}

// cutShort reports whether the scan of buf that ended at end may have
// ended only because buf stops: too few bytes for a header, or a header
// whose record runs past the end.
func cutShort(buf []byte, end int) bool {
	b := buf[end:]
	if len(b) < recHeader {
		return true
	}
	if string(b[:4]) != journalMagic {
		return false
	}
	n := int64(recHeader+int(b[17])+int(b[18])) + int64(binary.LittleEndian.Uint32(b[28:]))
	return n > int64(len(b))
}

// entry is a record's place in a journal.
type entry struct {
	pos, end int
	kind     byte // 0 for a record that is damaged (torn by a crash)
	record
}

// scanJournal returns the entries of buf's current generation: the
// records from its start, of the first record's generation, up to the
// first byte that does not start one. A record whose header is whole but
// whose checksum fails is damaged and passed over: a crash tore it, and
// every byte after the last record is zero, so what follows it is the
// generation's next record or the end.
func scanJournal(buf []byte) (entries []entry, end int) {
	var gen uint64
	haveGen := false
	for pos := 0; ; {
		e, g, ok := parseRecord(buf, pos)
		if !ok || (e.kind != 0 && haveGen && g != gen) {
			return entries, pos
		}
		if e.kind != 0 && !haveGen {
			gen, haveGen = g, true
		}
		entries = append(entries, e)
		pos = e.end
	}
}

// parseRecord reads the record at pos. ok is false when no record header
// starts there; a whole header with a failing checksum is a damaged entry
// (kind 0).
func parseRecord(buf []byte, pos int) (e entry, gen uint64, ok bool) {
	b := buf[pos:]
	if len(b) < recHeader || string(b[:4]) != journalMagic {
		return entry{}, 0, false
	}
	idLen, tokLen := int(b[17]), int(b[18])
	end := int64(recHeader+idLen+tokLen) + int64(binary.LittleEndian.Uint32(b[28:]))
	if end > int64(len(b)) {
		return entry{}, 0, false
	}
	e = entry{pos: pos, end: pos + int(end)}
	kind := b[16]
	if crc32.Checksum(b[8:end], castagnoli) != binary.LittleEndian.Uint32(b[4:]) ||
		(kind != recAppend && kind != recVoid) {
		return e, 0, true
	}
	p := b[recHeader:end]
	e.kind = kind
	e.record = record{id: string(p[:idLen]), token: string(p[idLen : idLen+tokLen]),
		off: int64(binary.LittleEndian.Uint64(b[20:])), data: p[idLen+tokLen:]}
	return e, binary.LittleEndian.Uint64(b[8:]), true
}

// appendRecord appends one record to buf. A record, little-endian:
//
//	0  magic "cjr1"
//	4  CRC-32C of bytes 8 to the record's end
//	8  generation: the same for every record written since the journal
//	   was last emptied, and new each time
//	16 kind: recAppend, or recVoid (an append of a deleted session, its
//	   bytes zeroed)
//	17 length of the session ID
//	18 length of the session's token
//	19 zero
//	20 the offset in the session's log where the data was written
//	28 length of the data
//	32 the session ID, the token, the data
//
// The records of a half follow each other from its start, all of one
// generation (new each time the half is written again), and every byte
// after them is zero; see scanJournal for where they end.
func appendRecord(buf []byte, gen uint64, kind byte, id, token string, off int64, data []byte) []byte {
	start := len(buf)
	buf = append(buf, journalMagic...)
	buf = binary.LittleEndian.AppendUint32(buf, 0)
	buf = binary.LittleEndian.AppendUint64(buf, gen)
	buf = append(buf, kind, byte(len(id)), byte(len(token)), 0)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(off))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(data)))
	buf = append(buf, id...)
	buf = append(buf, token...)
	buf = append(buf, data...)
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(buf[start+8:], castagnoli))
	return buf
}

func newGen() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}
