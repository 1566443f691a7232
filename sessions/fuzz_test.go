package sessions_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/sessions"
)

// FuzzImportOpenAI feeds the openai importer arbitrary bytes; its corpus
// lives in testdata/fuzz/FuzzImportOpenAI. Run with
//
//	go test -run XXX -fuzz FuzzImportOpenAI -fuzztime 2m ./sessions/
func FuzzImportOpenAI(f *testing.F) {
	seed(f, "openai")
	f.Add([]byte(`[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},{"role":"tool","tool_call_id":"a","content":"1"}]`))
	f.Add([]byte(`{"messages":[{"role":"developer","content":[{"type":"text","text":"x"}]},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`))
	f.Add([]byte(`[{"role":"tool","tool_call_id":"zz","content":"orphan"}]`))
	f.Add([]byte(`[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"not json"}}]}]`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, sessions.OpenAI, data) })
}

// FuzzImportCheckpoint feeds the checkpoint importer arbitrary bytes; its
// corpus lives in testdata/fuzz/FuzzImportCheckpoint. Run with
//
//	go test -run XXX -fuzz FuzzImportCheckpoint -fuzztime 2m ./sessions/
func FuzzImportCheckpoint(f *testing.F) {
	seed(f, "checkpoint")
	f.Add([]byte(`{"agent_profile":"b","current_step":2,"updated_at":"2023-10-27T10:00:00Z","variables":{"a":1},"history":[{"role":"assistant","content":"","metadata":{"tool_calls":[{"name":"t","args":{}}]}},{"role":"tool","name":"t","content":"r"}]}`))
	f.Add([]byte(`{"history":[{"role":"user","content":"x","metadata":{"parts":[{"type":"image","url":"u"}],"extra":1}}]}`))
	f.Add([]byte(`{"history":[],"updated_at":"9999-12-31T23:59:59.999999999+14:00"}`))
	f.Add([]byte(`{"history":`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, sessions.Checkpoint, data) })
}

// seed adds the golden exports of a format to the corpus.
func seed(f *testing.F, format string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*."+format+".json"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// fuzzImport checks one input: a rejection is an *ImportError and returns
// nothing else; an accepted input gives a memory that folds, dumps and
// loads back to the same snapshot, and that exports in its own format to a
// document that imports to the same messages.
func fuzzImport(t *testing.T, f sessions.Format, data []byte) {
	o := sessions.ImportOptions{RunID: "fuzz-run", Now: func() time.Time { return importTime }, Limits: cairn.Limits{MaxEventBytes: 4096}}
	m, rep, err := sessions.Import(data, f, o)
	if err != nil {
		if m != nil || rep != nil {
			t.Fatal("a memory or report returned with an error")
		}
		if _, ok := errors.AsType[*sessions.ImportError](err); !ok {
			t.Fatalf("rejection is %T, not *ImportError: %v", err, err)
		}
		return
	}
	st, err := m.State()
	if err != nil {
		t.Fatalf("accepted input does not fold: %v", err)
	}
	snap, err := st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := m.DumpJSON()
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	back, err := cairn.LoadJSON(doc)
	if err != nil {
		t.Fatalf("dumped memory does not load: %v\n%s", err, doc)
	}
	st2, err := back.State()
	if err != nil {
		t.Fatal(err)
	}
	if snap2, _ := st2.Snapshot(); !bytes.Equal(snap, snap2) {
		t.Fatalf("snapshot changed over dump and load:\n%s\n%s", snap, snap2)
	}
	var out bytes.Buffer
	if _, err := sessions.Export(&out, f, m); err != nil {
		t.Fatalf("export: %v", err)
	}
	again, _, err := sessions.Import(out.Bytes(), f, o)
	if err != nil {
		t.Fatalf("the export of an accepted input does not import: %v\n%s", err, out.Bytes())
	}
	st3, err := again.State()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(stripSeqs(st3.Messages))
	w, _ := json.Marshal(stripSeqs(st.Messages))
	if !bytes.Equal(g, w) {
		t.Fatalf("messages changed over export and import:\n got %s\nwant %s", g, w)
	}
}

func stripSeqs(msgs []cairn.Message) []cairn.Message {
	out := make([]cairn.Message, len(msgs))
	for i, m := range msgs {
		m.Seq, m.IsError = 0, false
		out[i] = m
	}
	return out
}
