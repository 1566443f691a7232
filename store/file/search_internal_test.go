//go:build linux || darwin

package file

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/envsum"
)

// TestAppendSearchLine: a line of search.jsonl is json.Marshal's form of
// its searchLine led by its checksum, and reads back, whatever the text
// holds; an event without a token is left out.
func TestAppendSearchLine(t *testing.T) {
	texts := []string{"plain words", `quotes " and \ back`, "<b>&amp;</b>", "日本 ✓ é", "tab\tnew\nline\x01", "!!!"}
	var evs []cairn.Event
	for i, text := range texts {
		e := cairn.MustEvent(cairn.KindMessageUser, "r", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: text}}})
		e.Seq = int64(i + 3)
		evs = append(evs, e)
	}
	ss := &session{size: 4096}
	ss.info.LastSeq, ss.info.UpdatedAt = 8, time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	line, err := appendSearchLine([]byte("keep"), ss, evs)
	if err != nil {
		t.Fatal(err)
	}
	line = bytes.TrimPrefix(line, []byte("keep"))
	want := searchLine{Last: 8, Log: 4096, At: ss.info.UpdatedAt}
	for i, text := range texts[:5] {
		want.Events = append(want.Events, searchDoc{Seq: int64(i + 3), Text: text})
	}
	body, _ := json.Marshal(want)
	if got := line[envsum.Len : len(line)-1]; !bytes.Equal(got, body[1:]) || line[len(line)-1] != '\n' {
		t.Errorf("the line is\n%s\nwant the checksum and\n%s", line, body)
	}
	got, err := parseSearchLine(line[:len(line)-1], 2)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseSearchLine = %+v, %v; want %+v", got, err, want)
	}
	line[len(line)/2]++
	if _, err := parseSearchLine(line[:len(line)-1], 2); err == nil {
		t.Errorf("a line with a byte changed reads")
	}
}
