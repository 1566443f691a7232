package provider

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/cairnhq/cairn"
)

// Model answers one model call (a think step).
type Model interface {
	// ID names the model as "provider:name", for example
	// "openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", "offline".
	ID() string
	// Generate makes one model call. It streams text to req.OnText when
	// that is set and returns the complete response. Transient provider
	// failures (429, 5xx) are retried inside with backoff, honouring
	// Retry-After; the error returned is final.
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// Request is everything a model call needs.
type Request struct {
	// Messages is the conversation so far, as State.Messages holds it:
	// system (instructions, then a compaction's summary, if any), user,
	// assistant (with tool calls) and tool messages. On a PurposeSummary
	// request: the earlier summary, if any, then the messages to fold in.
	Messages []cairn.Message
	// Tools are the tools the model may call.
	Tools []Tool
	// Responses is the number of model responses recorded since the
	// session's last memory.reset: the script model's position.
	Responses int
	// Variables are the session variables, for models that read them.
	Variables map[string]json.RawMessage
	// OnText, when set, receives the response text as it streams.
	OnText func(delta string)
	// Purpose says what the call is for: PurposeChat (""), a turn of the
	// conversation, or PurposeSummary, a summary of older messages for a
	// compaction. A model that does not know a purpose treats the call as
	// a chat turn.
	Purpose string
	// SummaryTokens, on a PurposeSummary request, is about how many tokens
	// the summary may take; 0 leaves it to the model.
	SummaryTokens int
}

// Tool describes a tool to the model.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage // JSON Schema of the arguments object
}

// Response is a completed model call.
type Response struct {
	Text         string
	ToolCalls    []cairn.ToolCall // each with a unique ID
	Usage        cairn.Usage
	FinishReason string // "stop", "tool_calls", "length", …
	Model        string // the model that answered, as the provider names it
}

// ErrScriptEnded is returned by the script model past its last step.
var ErrScriptEnded = errors.New("script model: no steps left")
