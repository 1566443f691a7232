package anthropic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/internal/adapter"
)

// Environment variables read by New when Config leaves the field empty.
const (
	EnvAPIKey  = "ANTHROPIC_API_KEY"
	EnvBaseURL = "ANTHROPIC_BASE_URL"
)

// DefaultMaxRetries is how many times a call is retried after a 408, 409,
// 429, 5xx or connection failure when Config.MaxRetries is zero.
const DefaultMaxRetries = 3

// DefaultMaxTokens caps each answer when Config.MaxTokens is zero. Every
// Claude model accepts it.
const DefaultMaxTokens = 4096

// ErrNoAPIKey is returned by New when no API key is configured.
var ErrNoAPIKey = errors.New("no API key")

// Config configures a Model.
type Config struct {
	// Model is the model name, for example "claude-sonnet-4-5". Required.
	Model string
	// APIKey authenticates the calls. Empty: ANTHROPIC_API_KEY. Required.
	APIKey string
	// BaseURL is the API root. Empty: ANTHROPIC_BASE_URL, then
	// https://api.anthropic.com.
	BaseURL string
	// MaxTokens caps the tokens of each answer (max_tokens, which the
	// Messages API requires). Zero means DefaultMaxTokens.
	MaxTokens int64
	// MaxRetries is how many times a failed call is retried, with
	// exponential backoff that honours Retry-After. Zero means
	// DefaultMaxRetries; a negative value turns retries off.
	MaxRetries int
	// HTTPClient sends the requests. Nil: the SDK's default client.
	HTTPClient *http.Client
}

// Model is a provider.Model served by the Messages API. It is safe for
// concurrent use.
type Model struct {
	name   string
	tokens int64
	client sdk.Client
}

var _ provider.Model = (*Model)(nil)

// New returns a Model for cfg. It fails when the model name or the API key
// is missing (ErrNoAPIKey).
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: new model: Config.Model is empty")
	}
	key := cmp.Or(cfg.APIKey, os.Getenv(EnvAPIKey))
	if key == "" {
		return nil, fmt.Errorf("anthropic: new model %s: %w: set %s or Config.APIKey", cfg.Model, ErrNoAPIKey, EnvAPIKey)
	}
	opts := []option.RequestOption{
		option.WithAPIKey(key),
		option.WithMaxRetries(adapter.Retries(cfg.MaxRetries, DefaultMaxRetries)),
		option.WithMiddleware(adapter.CountAttempts),
	}
	if base := cmp.Or(cfg.BaseURL, os.Getenv(EnvBaseURL)); base != "" {
		if _, err := url.Parse(base); err != nil {
			return nil, fmt.Errorf("anthropic: new model %s: base URL: %w", cfg.Model, err)
		}
		opts = append(opts, option.WithBaseURL(base))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	tokens := cfg.MaxTokens
	if tokens <= 0 {
		tokens = DefaultMaxTokens
	}
	return &Model{name: cfg.Model, tokens: tokens, client: sdk.NewClient(opts...)}, nil
}

// ID returns "anthropic:" and the model name.
func (m *Model) ID() string { return "anthropic:" + m.name }

// Generate makes one streamed Messages API call. Text deltas go to
// req.OnText as they arrive; tool calls are assembled from their input
// deltas. Failed attempts are retried as Config.MaxRetries says; an HTTP
// error that ends the call is a *StatusError. When ctx ends, Generate
// returns at once with an error that wraps ctx.Err().
func (m *Model) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, fmt.Errorf("anthropic %s: %w", m.name, err)
	}
	ctx = adapter.WithAttempts(ctx)
	stream := m.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	var acc accumulator
	for stream.Next() {
		if err := acc.add(stream.Current(), req.OnText); err != nil {
			return nil, fmt.Errorf("anthropic %s: stream: %w", m.name, err)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, adapter.Failure(ctx, "anthropic "+m.name, err, status)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("anthropic %s: %w", m.name, err)
	}
	resp, err := acc.response()
	if err != nil {
		return nil, fmt.Errorf("anthropic %s: %w", m.name, err)
	}
	return resp, nil
}

// status is the StatusError of an error answer, or of an error event in
// the stream (which the SDK gives a status below 400).
func status(e *sdk.Error) *StatusError {
	return &StatusError{
		StatusCode: e.StatusCode,
		Type:       string(e.Type()),
		Message:    e.Message,
		RequestID:  e.RequestID,
		InStream:   e.StatusCode < 400,
	}
}

// StatusError is an HTTP error status that ended a call; see
// provider.StatusError.
type StatusError = provider.StatusError
