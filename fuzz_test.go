package cairn_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// FuzzLoadJSON feeds the loader arbitrary bytes. No input may panic; every
// rejection is a *MemoryLoadError; every accepted document folds, and dumps
// to a document that loads back to the same snapshot; each of its events is
// one a store's Append accepts (ValidateEvent), and reads back the same
// through ParseEnvelope as a store stores it. The corpus lives in
// testdata/fuzz/FuzzLoadJSON; run with
//
//	go test -run XXX -fuzz FuzzLoadJSON -fuzztime 5m .
func FuzzLoadJSON(f *testing.F) {
	golden, err := os.ReadFile("testdata/golden/v1.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add([]byte(`{"format":"cairn.memory","version":1,"events":[]}`))
	f.Add([]byte(`{"format":"cairn.memory","version":1,"events":[{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"custom","run":"","data":{"type":"a.b","payload":null}}]}`))
	f.Add([]byte(`{"format":"cairn.memory","version":2}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := cairn.LoadJSON(data)
		if err != nil {
			if m != nil {
				t.Fatal("a memory returned with an error")
			}
			if _, ok := errors.AsType[*cairn.MemoryLoadError](err); !ok {
				t.Fatalf("rejection is %T, not *MemoryLoadError: %v", err, err)
			}
			return
		}
		st, err := m.State()
		if err != nil {
			t.Fatalf("accepted document does not fold: %v", err)
		}
		for i, e := range m.Events() {
			if _, err := cairn.ValidateEvents([]cairn.Event{e}, int64(i)+1); err != nil {
				t.Fatalf("event %d loads but an append refuses it: %v", i, err)
			}
			line, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := driver.ParseEnvelope(line)
			if !ok || got.Seq != e.Seq || !got.At.Equal(e.At) || got.Kind != e.Kind || got.Run != e.Run {
				if !bytes.ContainsAny([]byte(string(e.Kind)+e.Run), "\\\"<>&") && !strings.ContainsFunc(string(e.Kind)+e.Run, func(r rune) bool { return r < 0x20 || r == 0x2028 || r == 0x2029 }) {
					t.Fatalf("event %d as stored, %s, does not read back: %+v, %v", i, line, got, ok)
				}
			}
		}
		snap, err := st.Snapshot()
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		doc, err := m.DumpJSON()
		if err != nil {
			t.Fatalf("dump: %v", err)
		}
		m2, err := cairn.LoadJSON(doc)
		if err != nil {
			t.Fatalf("dumped document does not load: %v\n%s", err, doc)
		}
		st2, err := m2.State()
		if err != nil {
			t.Fatal(err)
		}
		snap2, _ := st2.Snapshot()
		if !bytes.Equal(snap, snap2) {
			t.Fatalf("snapshot changed over dump/load:\n%s\n%s", snap, snap2)
		}
	})
}
