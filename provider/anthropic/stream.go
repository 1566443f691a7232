package anthropic

import (
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/internal/adapter"
)

// accumulator assembles a streamed message from its events. It keeps tool
// input exactly as the deltas spell it (the SDK's own accumulator replaces
// input that is not valid JSON with an empty object, which would hide a
// malformed call from the tool and the model).
type accumulator struct {
	model   string
	blocks  []*block
	stop    string
	usage   sdk.Usage
	started bool
}

type block struct {
	kind   string // "text", "tool_use", "thinking", …
	id     string
	name   string
	text   strings.Builder
	input  string // the input given at the block's start
	deltas strings.Builder
	more   bool // input_json_delta events arrived
}

// add applies one event, sending text deltas to onText.
func (a *accumulator) add(ev sdk.MessageStreamEventUnion, onText func(string)) error {
	switch ev.Type {
	case "message_start":
		a.started = true
		a.model = ev.Message.Model
		a.usage = ev.Message.Usage
	case "content_block_start":
		if ev.Index != int64(len(a.blocks)) {
			return fmt.Errorf("content block %d starts where block %d comes next", ev.Index, len(a.blocks))
		}
		cb := ev.ContentBlock
		b := &block{kind: cb.Type, id: cb.ID, name: cb.Name, input: cb.JSON.Input.Raw()}
		if cb.Type == "text" && cb.Text != "" {
			b.text.WriteString(cb.Text)
			if onText != nil {
				onText(cb.Text)
			}
		}
		a.blocks = append(a.blocks, b)
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= int64(len(a.blocks)) {
			return fmt.Errorf("delta for content block %d, which has not started", ev.Index)
		}
		b := a.blocks[ev.Index]
		switch ev.Delta.Type {
		case "text_delta":
			b.text.WriteString(ev.Delta.Text)
			if onText != nil && ev.Delta.Text != "" {
				onText(ev.Delta.Text)
			}
		case "input_json_delta":
			b.deltas.WriteString(ev.Delta.PartialJSON)
			b.more = true
		}
	case "message_delta":
		a.stop = string(ev.Delta.StopReason)
		// Usage counts here are totals for the whole message.
		u := ev.Usage
		a.usage.OutputTokens = u.OutputTokens
		if u.JSON.InputTokens.Valid() {
			a.usage.InputTokens = u.InputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			a.usage.CacheCreationInputTokens = u.CacheCreationInputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			a.usage.CacheReadInputTokens = u.CacheReadInputTokens
		}
	}
	return nil
}

// response is the completed call. A stream that ended before its stop
// reason is an error, never a silently truncated answer.
func (a *accumulator) response() (*provider.Response, error) {
	if !a.started {
		return nil, errors.New("stream: ended before message_start")
	}
	if a.stop == "" {
		return nil, errors.New("stream: ended without a stop reason (truncated)")
	}
	resp := &provider.Response{
		FinishReason: finishReason(a.stop),
		Model:        a.model,
		Usage: cairn.Usage{
			// Cached prompt tokens are counted apart by the API; the
			// prompt's size is their sum.
			InputTokens:  a.usage.InputTokens + a.usage.CacheCreationInputTokens + a.usage.CacheReadInputTokens,
			OutputTokens: a.usage.OutputTokens,
		},
	}
	var text strings.Builder
	for _, b := range a.blocks {
		switch b.kind {
		case "text":
			text.WriteString(b.text.String())
		case "tool_use":
			input := b.input
			if b.more {
				input = b.deltas.String()
			}
			id := b.id
			if id == "" {
				id = adapter.NewCallID("toolu_")
			}
			resp.ToolCalls = append(resp.ToolCalls, cairn.ToolCall{ID: id, Name: b.name, Args: adapter.Arguments(input)})
		}
	}
	resp.Text = text.String()
	return resp, nil
}

// finishReason maps a stop reason to cairn's finish reasons, which follow
// OpenAI's names. Reasons without a counterpart pass through.
func finishReason(stop string) string {
	switch sdk.StopReason(stop) {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		return "stop"
	case sdk.StopReasonToolUse:
		return "tool_calls"
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return "length"
	case sdk.StopReasonRefusal:
		return "content_filter"
	default:
		return stop
	}
}
