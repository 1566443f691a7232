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

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/internal/adapter"
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
	client, err := newClient("Config", cfg.APIKey, cfg.BaseURL, cfg.MaxRetries, cfg.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("openai: new model %s: %w", cfg.Model, err)
	}
	return &Model{name: cfg.Model, tokens: cfg.MaxTokens, client: client}, nil
}

// newClient returns an SDK client for a key, a base URL, a number of
// retries and an HTTP client, each empty for its default (see Config), as
// the fields of the config type cfg say.
func newClient(cfg, apiKey, baseURL string, maxRetries int, hc *http.Client) (sdk.Client, error) {
	key := cmp.Or(apiKey, os.Getenv(EnvAPIKey))
	base := cmp.Or(baseURL, os.Getenv(EnvBaseURL))
	if key == "" && isOpenAI(base) {
		return sdk.Client{}, fmt.Errorf("%w: set %s or %s.APIKey", ErrNoAPIKey, EnvAPIKey, cfg)
	}
	opts := []option.RequestOption{
		option.WithAPIKey(key),
		option.WithMaxRetries(adapter.Retries(maxRetries, DefaultMaxRetries)),
		option.WithMiddleware(adapter.CountAttempts),
	}
	if base != "" {
		if _, err := url.Parse(base); err != nil {
			return sdk.Client{}, fmt.Errorf("base URL: %w", err)
		}
		opts = append(opts, option.WithBaseURL(base))
	}
	if hc != nil {
		opts = append(opts, option.WithHTTPClient(hc))
	}
	return sdk.NewClient(opts...), nil
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
	ctx = adapter.WithAttempts(ctx)
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
		return nil, adapter.Failure(ctx, "openai "+m.name, err, status)
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

// status is the StatusError of an error answer.
func status(e *sdk.Error) *StatusError {
	return &StatusError{StatusCode: e.StatusCode, Type: cmp.Or(e.Code, e.Type), Message: e.Message}
}

// StatusError is an HTTP error status that ended a call; see
// provider.StatusError.
type StatusError = provider.StatusError
