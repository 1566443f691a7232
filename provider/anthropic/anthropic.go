package anthropic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/cairnhq/cairn/provider"
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
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	opts := []option.RequestOption{
		option.WithAPIKey(key),
		option.WithMaxRetries(retries),
		option.WithMiddleware(countAttempts),
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
	var attempts atomic.Int32
	ctx = context.WithValue(ctx, attemptsKey{}, &attempts)
	stream := m.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	var acc accumulator
	for stream.Next() {
		if err := acc.add(stream.Current(), req.OnText); err != nil {
			return nil, fmt.Errorf("anthropic %s: stream: %w", m.name, err)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, m.failure(ctx, err, int(attempts.Load()))
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

// failure turns what ended a call into the error Generate returns.
func (m *Model) failure(ctx context.Context, err error, attempts int) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("anthropic %s: %w", m.name, ctxErr)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return fmt.Errorf("anthropic %s: %w", m.name, &StatusError{
			StatusCode: apiErr.StatusCode,
			Type:       string(apiErr.Type()),
			Message:    apiErr.Message,
			RequestID:  apiErr.RequestID,
			InStream:   apiErr.StatusCode < 400,
			Attempts:   attempts,
			Err:        err,
		})
	}
	if attempts > 1 {
		return fmt.Errorf("anthropic %s: after %d attempts: %w", m.name, attempts, err)
	}
	return fmt.Errorf("anthropic %s: %w", m.name, err)
}

// StatusError is an HTTP error status that ended a call; see
// provider.StatusError.
type StatusError = provider.StatusError

type attemptsKey struct{}

// countAttempts counts the requests of one Generate call, retries included.
func countAttempts(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if n, ok := req.Context().Value(attemptsKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	return next(req)
}
