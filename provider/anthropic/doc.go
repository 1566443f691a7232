// Package anthropic adapts the Anthropic Messages API to cairn's
// provider.Model, on the official Anthropic Go SDK.
//
// # Quick start
//
//	m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5"}) // key from ANTHROPIC_API_KEY
//	if err != nil {
//		return err
//	}
//	resp, err := m.Generate(ctx, &provider.Request{
//		Messages: []cairn.Message{{Role: cairn.RoleUser, Content: "Hello"}},
//		OnText:   func(delta string) { fmt.Print(delta) },
//	})
//
// # What a call sends
//
// Every call streams, with max_tokens from Config.MaxTokens
// (DefaultMaxTokens unless set). The Messages API has no system role, so
// every system message of the conversation becomes a block of the top-level
// system prompt, in order. Assistant messages carry their text and tool_use
// blocks (the recorded call IDs and JSON arguments); tool messages become
// tool_result blocks with their call IDs and is_error, and consecutive
// results share one user message, as the API requires. Call IDs that other
// providers made up are mapped to the characters the API accepts, the same
// way on both sides. User messages carry their image parts, and PDF and
// plain-text file parts as documents. Tool schemas are passed through as
// input schemas; a schema must describe an object.
//
// # What a call returns
//
// The text (streamed to Request.OnText as it arrives), the tool calls with
// the IDs the API gave them, token usage (input counts cached prompt tokens
// too), the model that answered, and the finish reason in the names cairn
// uses across providers: "end_turn" and "stop_sequence" → "stop",
// "tool_use" → "tool_calls", "max_tokens" → "length", "refusal" →
// "content_filter"; others pass through. Tool input is raw JSON; input that
// is not valid JSON is passed on as a JSON string holding the text the model
// sent, so the tool fails with a clear decoding error that the model can
// read, rather than the call being lost. A stream that ends without a stop
// reason is an error, never a silently truncated answer.
//
// # Errors and retries
//
// Requests that fail with 408, 409, 429, a 5xx status or a connection error
// are retried by the SDK, DefaultMaxRetries times unless Config.MaxRetries
// says otherwise, waiting as the server's Retry-After or Retry-After-Ms
// header says, or else with exponential backoff (0.5 s doubling, capped at
// 8 s). An HTTP error that ends a call, or an error event in the stream, is
// a *StatusError naming the status, the API's error type and message, and
// the attempts made. Cancelling the context stops a call at once, during a
// request, a stream or a backoff wait, and the error wraps context.Canceled.
package anthropic
