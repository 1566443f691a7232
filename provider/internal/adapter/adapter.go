// Package adapter holds what the model adapters built on a provider's SDK
// (provider/openai, provider/anthropic) do alike: the retry count they give
// the SDK, the attempts of a call they count, the error a failed call ends
// with, and how they read the tool calls a model sends. It holds too the
// usage that the models without a provider (provider/offline,
// provider/script) report.
package adapter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
)

// Retries is the retry count an SDK is given for a Config.MaxRetries of n:
// def when n is zero, none when n is negative.
func Retries(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// ChatInput is what a chat call sends for req: its messages and tools, or,
// for a summary request, provider.SummaryPrompt and no tools.
func ChatInput(req *provider.Request) ([]cairn.Message, []provider.Tool) {
	if req.Purpose == provider.PurposeSummary {
		return provider.SummaryPrompt(req), nil
	}
	return req.Messages, req.Tools
}

type attemptsKey struct{}

// WithAttempts returns ctx with a count of the requests made under it,
// which CountAttempts adds to and Failure reads.
func WithAttempts(ctx context.Context) context.Context {
	return context.WithValue(ctx, attemptsKey{}, new(atomic.Int32))
}

// CountAttempts is an SDK middleware that counts the requests of one call,
// retries included, in the count of the request's context (WithAttempts).
func CountAttempts(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	if n, ok := req.Context().Value(attemptsKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	return next(req)
}

// attempts is the count of ctx's requests (WithAttempts), or 0.
func attempts(ctx context.Context) int {
	if n, ok := ctx.Value(attemptsKey{}).(*atomic.Int32); ok {
		return int(n.Load())
	}
	return 0
}

// Failure turns err, which ended the stream of a call made under ctx, into
// the error Generate returns, prefixed with name (such as "openai gpt-4o"):
// ctx's own error when ctx has ended; the *provider.StatusError that status
// makes of the SDK's error E, with the attempts made and err; or else err,
// with the attempts made when there were more than one.
func Failure[E error](ctx context.Context, name string, err error, status func(E) *provider.StatusError) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", name, ctxErr)
	}
	n := attempts(ctx)
	if apiErr, ok := errors.AsType[E](err); ok {
		se := status(apiErr)
		se.Attempts = n
		se.Err = err
		return fmt.Errorf("%s: %w", name, se)
	}
	if n > 1 {
		return fmt.Errorf("%s: after %d attempts: %w", name, n, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Arguments turns the arguments text a model sent into a tool call's JSON
// arguments. Empty text is an empty object. Text that is not valid JSON is
// passed on as a JSON string holding that text: decoding it into a tool's
// argument object then fails with a clear error that the model can read,
// instead of the call being lost.
func Arguments(text string) json.RawMessage {
	t := strings.TrimSpace(text)
	if t == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(text) // a string always encodes
	return b
}

// NewCallID names a tool call that the server sent without an ID: prefix
// and 24 random hex digits.
func NewCallID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// EstimatedUsage is the estimate of req and of resp as a message, the
// usage a model without a provider reports.
func EstimatedUsage(req *provider.Request, resp *provider.Response) cairn.Usage {
	out := cairn.Message{Role: cairn.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls}
	return cairn.Usage{InputTokens: int64(provider.EstimateTokens(req)), OutputTokens: int64(provider.EstimateMessageTokens(out))}
}
