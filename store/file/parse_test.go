//go:build linux || darwin

package file

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"reflect"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// TestParseLine checks the reader of log lines against json.Unmarshal on
// the lines encodeEvents writes, and that it refuses what is not a line of
// the log.
func TestParseLine(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	evs := []cairn.Event{
		{V: 1, Seq: 1, At: at, Kind: cairn.KindCustom, Run: "r1", Data: json.RawMessage(`{"type":"a.b","payload":{"x":[1,2,"é\"}"]}}`)},
		{V: 1, Seq: 2, At: at, Kind: cairn.KindCustom, Run: "r\"1", Data: json.RawMessage(`{"type":"a.b","payload":null}  `)},
		{V: 1, Seq: 10, At: at, Kind: cairn.KindCustom, Run: "", Data: json.RawMessage("{\"type\":\"a.b\",\n\"payload\":1}")},
	}
	buf, err := encodeEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	before := bytes.Clone(buf)
	for _, line := range splitLines(buf) {
		line = bytes.TrimSuffix(line, []byte(" "))
		var want cairn.Event
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatal(err)
		}
		got, st, err := parseLine(line)
		if err != nil || st != lineSealed {
			t.Errorf("line %s: %v, %v; want it read, with its checksum", line, st, err)
			continue
		}
		if !reflect.DeepEqual(got, want) || !got.At.Equal(want.At) {
			t.Errorf("line %s:\ngot  %+v\nwant %+v", line, got, want)
		}
	}
	if !bytes.Equal(buf, before) {
		t.Errorf("parseLine changed its lines:\n%s\nwant\n%s", buf, before)
	}
	for _, bad := range []string{
		`{"v":1,"seq":01,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"r","data":{}}`,
		`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"cus` + "\x01" + `tom","run":"r","data":{}}`,
		`{"v":1,"seq":1,"at":"yesterday","kind":"custom","run":"r","data":{}}`,
		`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"r","data":{"a":}}`,
		`{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"r","data":{}`,
		`{"seq":1,"v":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"r","data":{}}`,
	} {
		if _, st, err := parseLine([]byte(bad)); st != lineBad || err == nil {
			t.Errorf("read %s; want it refused", bad)
		}
	}
}

// TestParseLine_Damage changes each byte of a line in turn: every change
// is refused, in the data, in the envelope's fields, in the checksum or in
// its field's name. A line written before checksums is read, unchecked.
func TestParseLine_Damage(t *testing.T) {
	e := testEvent(3)
	e.Data = json.RawMessage(`{"type":"test.lock","payload":"the quick brown fox"}`)
	buf, err := encodeEvents([]cairn.Event{e})
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.TrimSuffix(buf, []byte("\n"))
	for i := range line {
		for _, flip := range []byte{0x01, 0x20, 0x80} {
			b := bytes.Clone(line)
			b[i] ^= flip
			if got, st, _ := parseLine(b); st != lineBad {
				t.Errorf("byte %d (%q) ^ %#x: read as %+v, want it refused", i, line[i], flip, got)
			}
		}
	}
	old := append([]byte("{"), line[sumLen:]...)
	if got, st, err := parseLine(old); err != nil || st != lineOld || got.Seq != 3 {
		t.Errorf("a line without checksum: %+v, %v, %v; want it read", got, st, err)
	}
}

func splitLines(buf []byte) [][]byte {
	var out [][]byte
	start := 0
	for i, c := range buf {
		if c == '\n' {
			out = append(out, buf[start:i])
			start = i + 1
		}
	}
	return out
}

// TestEncodeCache checks that meta.json and info.json are written exactly
// as json.Marshal writes a metaFile and a cacheFile.
func TestEncodeCache(t *testing.T) {
	infos := []cairn.SessionInfo{
		{ID: "s1", Status: cairn.StatusNew, Labels: map[string]string{}},
		{ID: "s0", Status: cairn.StatusRunning, Labels: nil, FirstMessage: "tab\there, bell \a, \xff bad UTF-8, emoji 🙂"},
		{ID: "s-2", FirstMessage: "a \"quoted\" <b>é</b>\n", Status: cairn.StatusCompleted, Steps: 7, LastSeq: 42,
			CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), UpdatedAt: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC),
			Labels: map[string]string{"z": "1", "a": "\u2028"}},
	}
	for _, info := range infos {
		meta, err := encodeMeta(info, 1234)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := json.Marshal(metaFile{Format: metaFormat, Version: 1, SessionInfo: info, LogSize: 1234}); string(meta) != string(want) {
			t.Errorf("encodeMeta(%s) =\n%s\nwant\n%s", info.ID, meta, want)
		}
		want, err := json.Marshal(cacheFile{CRC: crc32.Checksum(meta, castagnoli), Info: meta})
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeCache(meta); string(got) != string(want) {
			t.Errorf("encodeCache(%s) =\n%s\nwant\n%s", info.ID, got, want)
		}
	}
}

// FuzzEncodeMeta checks encodeMeta against json.Marshal on any text in the
// fields a caller controls.
func FuzzEncodeMeta(f *testing.F) {
	f.Add("s1", "hello", "k", "v", 3, int64(9), int64(1e18))
	f.Add("x", "<a href=\"&\">\u2028\x00", "é", "\xff", -1, int64(-5), int64(0))
	f.Fuzz(func(t *testing.T, id, first, key, val string, steps int, last, ns int64) {
		info := cairn.SessionInfo{ID: id, FirstMessage: first, Status: cairn.Status(val), Steps: steps, LastSeq: last,
			CreatedAt: time.Unix(0, ns).UTC(), UpdatedAt: time.Unix(0, ns/3), Labels: map[string]string{key: val, val: key}}
		got, err := encodeMeta(info, last)
		want, werr := json.Marshal(metaFile{Format: metaFormat, Version: 1, SessionInfo: info, LogSize: last})
		if (err != nil) != (werr != nil) || err == nil && string(got) != string(want) {
			t.Fatalf("encodeMeta = %s, %v\njson.Marshal = %s, %v", got, err, want, werr)
		}
	})
}
