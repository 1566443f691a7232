package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
)

var (
	responseText = strings.Repeat("The file lists 3 records.\nEach one has a \"name\" and a total; ", 14)
	toolOutput   = strings.Repeat("id,name,total\n1,alpha,10\n2,beta,20\n3,gamma,30\n", 19)
	benchStart   = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// Event returns the realistic ~1 KB event numbered seq: a model response
// asking for a tool at odd seqs, the tool's result at even ones.
func Event(seq int64) cairn.Event {
	call := fmt.Sprintf("call_%d", (seq+1)/2)
	var e cairn.Event
	if seq%2 == 1 {
		e = cairn.MustEvent(cairn.KindModelResponse, "run-1", cairn.ModelResponse{Text: responseText,
			ToolCalls: []cairn.ToolCall{{ID: call, Name: "read_file", Args: json.RawMessage(`{"path":"data/records.csv"}`)}},
			Model:     "gpt-4.1", Usage: cairn.Usage{InputTokens: 812, OutputTokens: 96}, FinishReason: "tool_calls", LatencyMS: 840})
	} else {
		e = cairn.MustEvent(cairn.KindToolResult, "run-1", cairn.ToolResult{CallID: call, Name: "read_file",
			Output: toolOutput, DurationMS: 2})
	}
	e.Seq, e.At = seq, benchStart.Add(time.Duration(seq)*time.Millisecond)
	return e
}

// Events returns the events numbered from..to, inclusive.
func Events(from, to int64) []cairn.Event {
	evs := make([]cairn.Event, 0, to-from+1)
	for seq := from; seq <= to; seq++ {
		evs = append(evs, Event(seq))
	}
	return evs
}

// EventJSONBytes is the length of the event's JSON envelope.
func EventJSONBytes(e cairn.Event) int {
	b, _ := json.Marshal(e)
	return len(b)
}

// plainEvent is an event decoded the plain way: one json.Unmarshal into
// typed fields, no checks; the floor of a resume.
type plainEvent struct {
	V    int       `json:"v"`
	Seq  int64     `json:"seq"`
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	Run  string    `json:"run"`
	Data struct {
		Text         string           `json:"text"`
		ToolCalls    []cairn.ToolCall `json:"tool_calls"`
		Model        string           `json:"model"`
		Usage        cairn.Usage      `json:"usage"`
		FinishReason string           `json:"finish_reason"`
		LatencyMS    int64            `json:"latency_ms"`
		CallID       string           `json:"call_id"`
		Name         string           `json:"name"`
		Output       string           `json:"output"`
		IsError      bool             `json:"is_error"`
		DurationMS   int64            `json:"duration_ms"`
	} `json:"data"`
}

// decodePlain decodes rows the plain way.
func decodePlain(rows [][]byte) error {
	out := make([]plainEvent, len(rows))
	for i, r := range rows {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return fmt.Errorf("decode row %d: %w", i, err)
		}
	}
	return nil
}

// prefill appends events from+1..to to a session in batches of 500.
func prefill(ctx context.Context, s cairn.Store, id string, from, to int64) error {
	for last := from; last < to; {
		n := min(500, to-last)
		if err := s.Append(ctx, id, last, Events(last+1, last+n)...); err != nil {
			return fmt.Errorf("prefill %s at seq %d: %w", id, last, err)
		}
		last += n
	}
	return nil
}
