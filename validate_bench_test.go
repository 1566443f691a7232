package cairn_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// benchEvents returns n realistic ~1 KB events, numbered from 1: model
// responses that ask for a tool and the tools' results, in turn.
func benchEvents(n int) []cairn.Event {
	text := strings.Repeat("The file lists 3 records.\nEach one has a \"name\" and a total; ", 14)
	out := strings.Repeat("id,name,total\n1,alpha,10\n2,beta,20\n3,gamma,30\n", 19)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	evs := make([]cairn.Event, n)
	for i := range evs {
		var e cairn.Event
		if i%2 == 0 {
			e = cairn.MustEvent(cairn.KindModelResponse, "run-1", cairn.ModelResponse{Text: text,
				ToolCalls: []cairn.ToolCall{{ID: "call_" + string(rune('a'+i%26)), Name: "read_file", Args: json.RawMessage(`{"path":"data/records.csv"}`)}},
				Model:     "gpt-4.1", Usage: cairn.Usage{InputTokens: 812, OutputTokens: 96}, FinishReason: "tool_calls", LatencyMS: 840})
		} else {
			e = cairn.MustEvent(cairn.KindToolResult, "run-1", cairn.ToolResult{CallID: "call_" + string(rune('a'+(i-1)%26)),
				Name: "read_file", Output: out, DurationMS: 2})
		}
		e.Seq, e.At = int64(i+1), at.Add(time.Duration(i)*time.Millisecond)
		evs[i] = e
	}
	return evs
}

// cpuLoop runs f in b.Loop and reports, beside the time per op, the
// process's CPU time per op (cpu-ns/op): unlike the time, it does not grow
// when other processes take the machine's cores, so it is the figure to
// compare on a shared machine.
func cpuLoop(b *testing.B, f func() error) {
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkCheckAppend(b *testing.B) {
	evs := benchEvents(2)
	b.SetBytes(int64(len(evs[0].Data)))
	cpuLoop(b, func() error { _, err := driver.CheckAppend(cairn.Limits{}, "bench", 0, evs[:1]); return err })
}

func BenchmarkEvent_Decode(b *testing.B) {
	for _, k := range []int{0, 1} {
		e := benchEvents(2)[k]
		b.Run(string(e.Kind), func(b *testing.B) {
			b.SetBytes(int64(len(e.Data)))
			cpuLoop(b, func() error { _, err := e.Decode(); return err })
		})
	}
}

func BenchmarkFold(b *testing.B) {
	evs := benchEvents(20000)
	cpuLoop(b, func() error { _, err := cairn.Fold(evs); return err })
}

// BenchmarkFold_Plain is the floor of BenchmarkFold: each event's data
// decoded once, without checks, into its type.
func BenchmarkFold_Plain(b *testing.B) {
	evs := benchEvents(20000)
	for b.Loop() {
		for _, e := range evs {
			var err error
			if e.Kind == cairn.KindModelResponse {
				var v cairn.ModelResponse
				err = json.Unmarshal(e.Data, &v)
			} else {
				var v cairn.ToolResult
				err = json.Unmarshal(e.Data, &v)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchUser returns a message.user event of about 300 bytes.
func benchUser() cairn.Event {
	e := cairn.MustEvent(cairn.KindMessageUser, "run-1", cairn.MessageUser{Parts: []cairn.Part{{Type: "text",
		Text: strings.Repeat("Please read data/records.csv and tell me the \"total\" of each row. ", 4)}}})
	e.Seq, e.At = 1, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return e
}

func BenchmarkEvent_DecodeUser(b *testing.B) {
	e := benchUser()
	b.SetBytes(int64(len(e.Data)))
	cpuLoop(b, func() error { _, err := e.Decode(); return err })
}

// BenchmarkParseEnvelope decodes a stored envelope of a 1 KB
// model.response, as the stores do on Load, and then its data, as a
// replay does.
func BenchmarkParseEnvelope(b *testing.B) {
	line, err := json.Marshal(benchEvents(1)[0])
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(line)))
	b.Run("envelope", func(b *testing.B) {
		cpuLoop(b, func() error {
			if _, ok := driver.ParseEnvelope(line); !ok {
				return errors.New("not parsed")
			}
			return nil
		})
	})
	b.Run("envelope+data", func(b *testing.B) {
		cpuLoop(b, func() error {
			e, ok := driver.ParseEnvelope(line)
			if !ok {
				return errors.New("not parsed")
			}
			_, err := e.Decode()
			return err
		})
	})
}

// BenchmarkLoadJSON loads a memory document of 10,000 ~1 KB events, as
// cairn sessions import does.
func BenchmarkLoadJSON(b *testing.B) {
	m, err := cairn.NewMemory(benchEvents(10000)...)
	if err != nil {
		b.Fatal(err)
	}
	doc, err := m.DumpJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	cpuLoop(b, func() error { _, err := cairn.LoadJSON(doc); return err })
}
