package cairn_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
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

func BenchmarkCheckAppend(b *testing.B) {
	evs := benchEvents(2)
	b.SetBytes(int64(len(evs[0].Data)))
	for b.Loop() {
		if err := cairn.CheckAppend(cairn.Limits{}, "bench", 0, evs[:1]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvent_Decode(b *testing.B) {
	for _, k := range []int{0, 1} {
		e := benchEvents(2)[k]
		b.Run(string(e.Kind), func(b *testing.B) {
			b.SetBytes(int64(len(e.Data)))
			for b.Loop() {
				if _, err := e.Decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFold(b *testing.B) {
	evs := benchEvents(20000)
	for b.Loop() {
		if _, err := cairn.Fold(evs); err != nil {
			b.Fatal(err)
		}
	}
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
