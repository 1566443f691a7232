package openai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/cairnhq/cairn/provider"
)

// Environment variables read by New when Config leaves the field empty.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// DefaultMaxRetries is how many times a call is retried after a 408, 409,
// 429, 5xx or connection failure when Config.MaxRetries is zero.
const DefaultMaxRetries = 3

// ErrNoAPIKey is returned by New when no API key is configured for the
// OpenAI API itself.
var ErrNoAPIKey = errors.New("no API key")

// Config configures a Model.
type Config struct {
	// Model is the model name sent to the server, for example
	// "gpt-4o-mini" or, on Ollama, "llama3.2". Required.
	Model string
	// APIKey is sent as a bearer token. Empty: OPENAI_API_KEY. A key is
	// required for the OpenAI API; a server at another BaseURL may do
	// without one, and then no Authorization header is sent.
	APIKey string
	// BaseURL is the API root, for example "http://localhost:11434/v1"
	// for Ollama. Empty: OPENAI_BASE_URL, then https://api.openai.com/v1.
	BaseURL string
	// MaxTokens caps the tokens of each answer (max_completion_tokens).
	// Zero leaves the server's default.
	MaxTokens int64
	// MaxRetries is how many times a failed call is retried, with
	// exponential backoff that honours Retry-After. Zero means
	// DefaultMaxRetries; a negative value turns retries off.
	MaxRetries int
	// HTTPClient sends the requests. Nil: the SDK's default client.
	HTTPClient *http.Client
}

// Model is a provider.Model served by the Chat Completions API. It is safe
// for concurrent use.
type Model struct {
	name   string
	tokens int64
	client sdk.Client
}

var _ provider.Model = (*Model)(nil)

// New returns a Model for cfg. It fails when the model name is missing, or
// when the OpenAI API is the target and no key is set (ErrNoAPIKey).
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: new model: Config.Model is empty")
	}
	key := cmp.Or(cfg.APIKey, os.Getenv(EnvAPIKey))
	base := cmp.Or(cfg.BaseURL, os.Getenv(EnvBaseURL))
	if key == "" && isOpenAI(base) {
		return nil, fmt.Errorf("openai: new model %s: %w: set %s or Config.APIKey", cfg.Model, ErrNoAPIKey, EnvAPIKey)
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
	if base != "" {
		if _, err := url.Parse(base); err != nil {
			return nil, fmt.Errorf("openai: new model %s: base URL: %w", cfg.Model, err)
		}
		opts = append(opts, option.WithBaseURL(base))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{name: cfg.Model, tokens: cfg.MaxTokens, client: sdk.NewClient(opts...)}, nil
}

// isOpenAI reports whether base addresses the OpenAI API itself.
func isOpenAI(base string) bool {
	if base == "" {
		return true
	}
	u, err := url.Parse(base)
	return err != nil || strings.EqualFold(u.Hostname(), "api.openai.com")
}

// ID returns "openai:" and the model name.
func (m *Model) ID() string { return "openai:" + m.name }

// Generate makes one streamed Chat Completions call. Text deltas go to
// req.OnText as they arrive; tool calls are assembled from their deltas.
// Failed attempts are retried as Config.MaxRetries says; an HTTP error that
// ends the call is a *StatusError. When ctx ends, Generate returns at once
// with an error that wraps ctx.Err().
func (m *Model) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, fmt.Errorf("openai %s: %w", m.name, err)
	}
	var attempts atomic.Int32
	ctx = context.WithValue(ctx, attemptsKey{}, &attempts)
	stream := m.client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()

	var acc sdk.ChatCompletionAccumulator
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			return nil, fmt.Errorf("openai %s: stream: chunk %q does not follow the ones before it", m.name, chunk.RawJSON())
		}
		if req.OnText == nil {
			continue
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			if c.Delta.Content != "" {
				req.OnText(c.Delta.Content)
			}
			if c.Delta.Refusal != "" {
				req.OnText(c.Delta.Refusal)
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, m.failure(ctx, err, int(attempts.Load()))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("openai %s: %w", m.name, err)
	}
	resp, err := response(&acc.ChatCompletion)
	if err != nil {
		return nil, fmt.Errorf("openai %s: %w", m.name, err)
	}
	return resp, nil
}

// failure turns what ended a call into the error Generate returns.
func (m *Model) failure(ctx context.Context, err error, attempts int) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("openai %s: %w", m.name, ctxErr)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return fmt.Errorf("openai %s: %w", m.name, &StatusError{
			StatusCode: apiErr.StatusCode,
			Type:       cmp.Or(apiErr.Code, apiErr.Type),
			Message:    apiErr.Message,
			Attempts:   attempts,
			Err:        err,
		})
	}
	if attempts > 1 {
		return fmt.Errorf("openai %s: after %d attempts: %w", m.name, attempts, err)
	}
	return fmt.Errorf("openai %s: %w", m.name, err)
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
