//go:build linux || darwin

package file

import (
	"bytes"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestEncodeEvents_RoundTrip encodes events with awkward runs and times and
// decodes them back, whole and through the recovery scanner.
func TestEncodeEvents_RoundTrip(t *testing.T) {
	runs := []string{"plain-run", `a"b\c`, "<tag>&", "é日本", "line\nbreak", "\u2028\x00", ""}
	var evs []cairn.Event
	for i, run := range runs {
		e := testEvent(int64(i + 1))
		e.Run = run
		e.At = time.Date(2026, 1, 2, 3, 4, 5, i, time.FixedZone("x", 3600))
		evs = append(evs, e)
	}
	buf, err := encodeEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(buf, []byte(" \n")); n != len(evs)-1 {
		t.Errorf("%d lines marked continued, want %d", n, len(evs)-1)
	}
	got, err := decodeLog(buf, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	scanned, n, err := scanTail(buf, 1)
	if err != nil || n != len(buf) || len(scanned) != len(evs) {
		t.Fatalf("scanTail = %d events, %d bytes, %v; want %d, %d, nil", len(scanned), n, err, len(evs), len(buf))
	}
	for i, e := range evs {
		for _, g := range []cairn.Event{got[i], scanned[i]} {
			if g.Run != e.Run || g.Seq != e.Seq || !g.At.Equal(e.At) || g.Kind != e.Kind || !bytes.Equal(g.Data, e.Data) {
				t.Errorf("event %d came back as %+v, want %+v", i, g, e)
			}
		}
	}
	if scanned, n, err := scanTail(buf[:len(buf)-1], 1); err != nil || n != 0 || len(scanned) != 0 {
		t.Errorf("scanTail of an append missing its last newline = %d events, %d bytes, %v; want none", len(scanned), n, err)
	}
}

// BenchmarkEncodeEvents and BenchmarkDecodeLog measure the CPU cost of
// writing and reading log lines of ~1 KB events (their checksums
// included), without the disk.
func BenchmarkEncodeEvents(b *testing.B) {
	e := storetest.Padded(1, 1024)
	b.SetBytes(int64(len(e.Data)))
	for b.Loop() {
		if _, err := encodeEvents([]cairn.Event{e}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeLog(b *testing.B) {
	var log []byte
	for seq := int64(1); seq <= 10000; seq++ {
		line, err := encodeEvents([]cairn.Event{storetest.Padded(seq, 1024)})
		if err != nil {
			b.Fatal(err)
		}
		log = append(log, line...)
	}
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		evs, err := decodeLog(log, 1, 1)
		if err != nil || len(evs) != 10000 {
			b.Fatal(len(evs), err)
		}
	}
}

// TestReadTail reads the last n lines of logs of short and long lines
// (longer than the first block read), for every n: each time exactly
// those lines, and not ok for more lines than the log holds.
func TestReadTail(t *testing.T) {
	var log []byte
	var lines [][]byte
	for i := range 60 {
		n := 10 + i*7
		if i%11 == 3 {
			n = tailBlock + 1000*i // longer than a block
		}
		line := append(bytes.Repeat([]byte{byte('a' + i%26)}, n), '\n')
		lines = append(lines, line)
		log = append(log, line...)
	}
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(slices.Clone(log), "a torn line past the size"...)); err != nil {
		t.Fatal(err)
	}
	size := int64(len(log))
	for n := int64(1); n <= int64(len(lines)); n++ {
		got, ok, err := readTail(f, size, n)
		want := bytes.Join(lines[int64(len(lines))-n:], nil)
		if err != nil || !ok || !bytes.Equal(got, want) {
			t.Fatalf("readTail(%d lines) = %d bytes, %v, %v; want %d bytes", n, len(got), ok, err, len(want))
		}
	}
	if _, ok, err := readTail(f, size, int64(len(lines))+1); ok || err != nil {
		t.Errorf("readTail of more lines than the log holds: ok %v, %v", ok, err)
	}
}
