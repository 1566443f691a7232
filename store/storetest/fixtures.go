package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Clock is a controllable clock for StoreOptions.Now. It starts at the
// current time rounded to the second (so backends with native expiry that
// runs on real time still see plausible times) and moves only when told.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at the current time, rounded down to the second.
func NewClock() *Clock { return &Clock{now: time.Now().UTC().Truncate(time.Second)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Number gives events the seqs after last, in order, and the format version.
func Number(last int64, events ...cairn.Event) []cairn.Event {
	out := make([]cairn.Event, len(events))
	for i, e := range events {
		e.Seq = last + int64(i) + 1
		e.V = cairn.FormatVersion
		out[i] = e
	}
	return out
}

var fixtureTime = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)

func ev(kind cairn.Kind, run string, i int, v any) cairn.Event {
	e := cairn.MustEvent(kind, run, v)
	e.At = fixtureTime.Add(time.Duration(i) * time.Millisecond)
	return e
}

// Conversation returns the events of a realistic run that uses every event
// kind, numbered from last+1: a reset, instructions, a user message, a
// model response with two tool calls (one not idempotent), their results,
// variables set and deleted, an approval round, a compaction, a custom step
// and the end of the run. The user message is text.
func Conversation(last int64, run, text string) []cairn.Event {
	args := json.RawMessage(`{"expression":"2*(3+4)"}`)
	calls := []cairn.ToolCall{
		{ID: "call_1", Name: "calc", Args: args},
		{ID: "call_2", Name: "append_file", Args: json.RawMessage(`{"path":"/tmp/x","line":"héllo \"quoted\""}`)},
	}
	i := 0
	next := func(kind cairn.Kind, v any) cairn.Event { i++; return ev(kind, run, int(last)+i, v) }
	evs := []cairn.Event{
		next(cairn.KindRunStarted, cairn.RunStarted{RunID: run, Agent: "tester", Model: "offline",
			Fingerprint: cairn.Fingerprint{Model: "offline", Instructions: "abc", Tools: "def"}, Reset: true}),
		next(cairn.KindMemoryReset, cairn.MemoryReset{}),
		next(cairn.KindMessageSystem, cairn.MessageSystem{Text: "You are a careful assistant."}),
		next(cairn.KindMessageUser, cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: text}}}),
		next(cairn.KindModelResponse, cairn.ModelResponse{Text: "Let me work.", ToolCalls: calls, Model: "offline",
			Usage: cairn.Usage{InputTokens: 12, OutputTokens: 7}, FinishReason: "tool_calls", LatencyMS: 3}),
		next(cairn.KindToolResult, cairn.ToolResult{CallID: "call_1", Name: "calc", Output: "14", DurationMS: 1}),
		next(cairn.KindRunInterrupted, cairn.RunInterrupted{Reason: cairn.InterruptApproval, Pending: calls[1:]}),
		next(cairn.KindApprovalDecided, cairn.ApprovalDecided{CallID: "call_2", Approved: true, Note: "ok"}),
		next(cairn.KindToolStarted, cairn.ToolStarted{CallID: "call_2", Name: "append_file", Args: calls[1].Args}),
		next(cairn.KindToolResult, cairn.ToolResult{CallID: "call_2", Name: "append_file", Output: "appended", DurationMS: 2}),
		next(cairn.KindStateSet, cairn.StateSet{Set: map[string]json.RawMessage{"user": json.RawMessage(`{"name":"Alice","n":12345678901234567890}`), "tmp": json.RawMessage(`1.50`)}}),
		next(cairn.KindStateSet, cairn.StateSet{Deleted: []string{"tmp"}}),
		next(cairn.KindMemoryCompacted, cairn.MemoryCompacted{Summary: "The user asked for arithmetic.", UpTo: last + 4}),
		next(cairn.KindCustom, cairn.Custom{Type: "test.note", Payload: json.RawMessage(`{"unicode":"日本 ✓","html":"<b>&</b>"}`)}),
		next(cairn.KindModelResponse, cairn.ModelResponse{Text: "The answer is 14.", Model: "offline", FinishReason: "stop"}),
		next(cairn.KindRunFinished, cairn.RunFinished{Status: cairn.StatusCompleted, Output: "The answer is 14."}),
	}
	return Number(last, evs...)
}

// UserTurn returns a small run: started, a user message, a response and
// the end, numbered from last+1.
func UserTurn(last int64, run, text string) []cairn.Event {
	i := 0
	next := func(kind cairn.Kind, v any) cairn.Event { i++; return ev(kind, run, int(last)+i, v) }
	return Number(last,
		next(cairn.KindRunStarted, cairn.RunStarted{RunID: run, Agent: "tester", Model: "offline"}),
		next(cairn.KindMessageUser, cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: text}}}),
		next(cairn.KindModelResponse, cairn.ModelResponse{Text: "echo: " + text, Model: "offline", FinishReason: "stop"}),
		next(cairn.KindRunFinished, cairn.RunFinished{Status: cairn.StatusCompleted, Output: "echo: " + text}),
	)
}

// Custom returns one custom event carrying tag, numbered seq. Concurrency
// tests use the tag to tell which writer an event came from.
func Custom(seq int64, tag string) cairn.Event {
	e := ev(cairn.KindCustom, "run", int(seq), cairn.Custom{Type: "test.writer", Payload: json.RawMessage(fmt.Sprintf("%q", tag))})
	return Number(seq-1, e)[0]
}

// Padded returns a custom event numbered seq whose payload makes it about
// size bytes long.
func Padded(seq int64, size int) cairn.Event {
	pad := strings.Repeat("x", max(size-120, 1))
	e := ev(cairn.KindCustom, "run", int(seq), cairn.Custom{Type: "test.pad", Payload: json.RawMessage(fmt.Sprintf("%q", pad))})
	return Number(seq-1, e)[0]
}

// Queue is the label of the sessions that claim tests queue, and
// WorkerFilter the filter a worker of that queue claims with: its sessions
// that are new, running or interrupted. They are what worker.Filter("q")
// returns (package worker's tests hold them to it), written out so that
// the suite depends on no runtime package.
var (
	Queue        = map[string]string{"cairn.queue": "q"}
	WorkerFilter = cairn.ListOptions{
		Status: []cairn.Status{cairn.StatusNew, cairn.StatusRunning, cairn.StatusInterrupted},
		Labels: Queue,
	}
)

// ClaimAll claims with filter, as holder "w", until ClaimNext returns
// cairn.ErrNotFound, and returns the sessions in the order claimed. It
// fails the test on any other error, on a lease without the holder or a
// token, and after 1,000 claims.
func ClaimAll(t testing.TB, c driver.Claimer, filter cairn.ListOptions) []string {
	t.Helper()
	var got []string
	for range 1000 {
		lease, err := c.ClaimNext(t.Context(), "w", time.Minute, filter)
		if errors.Is(err, cairn.ErrNotFound) {
			return got
		}
		if err != nil {
			t.Fatalf("ClaimNext after %v: %v", got, err)
		}
		if lease.Holder != "w" || lease.Token <= 0 {
			t.Fatalf("ClaimNext = %+v", lease)
		}
		got = append(got, lease.Session)
	}
	t.Fatal("ClaimNext never ran out")
	return nil
}
