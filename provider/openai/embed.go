package openai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	sdk "github.com/openai/openai-go/v3"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/provider/internal/adapter"
)

// DefaultEmbedBatch is how many texts one embeddings request carries when
// EmbedderConfig.BatchSize is zero.
const DefaultEmbedBatch = 256

// EmbedderConfig configures an Embedder. The fields it shares with Config
// mean what they mean there.
type EmbedderConfig struct {
	// Model is the embedding model, for example "text-embedding-3-small"
	// or, on Ollama, "nomic-embed-text". Required.
	Model string
	// Dimensions asks the model for vectors of this length (the
	// text-embedding-3 models can shorten theirs); 0: the model's own.
	Dimensions int
	// BatchSize is how many texts one request carries at most: 0 means
	// DefaultEmbedBatch; the OpenAI API takes up to 2048.
	BatchSize  int
	APIKey     string
	BaseURL    string
	MaxRetries int
	HTTPClient *http.Client
}

// Embedder is a longterm.Embedder served by the Embeddings API of OpenAI
// and of the servers that speak it. It is safe for concurrent use.
type Embedder struct {
	model  string
	dims   int
	batch  int
	client sdk.Client
}

var _ longterm.Embedder = (*Embedder)(nil)

// NewEmbedder returns an Embedder for cfg. It fails when the model name is
// missing, the dimensions or batch size are out of range, or the OpenAI
// API is the target and no key is set (ErrNoAPIKey).
func NewEmbedder(cfg EmbedderConfig) (*Embedder, error) {
	switch {
	case cfg.Model == "":
		return nil, errors.New("openai: new embedder: EmbedderConfig.Model is empty")
	case cfg.Dimensions < 0 || cfg.Dimensions > longterm.MaxVectorDims:
		return nil, fmt.Errorf("openai: new embedder %s: EmbedderConfig.Dimensions %d is outside 0 to %d", cfg.Model, cfg.Dimensions, longterm.MaxVectorDims)
	case cfg.BatchSize < 0 || cfg.BatchSize > 2048:
		return nil, fmt.Errorf("openai: new embedder %s: EmbedderConfig.BatchSize %d is outside 0 to 2048", cfg.Model, cfg.BatchSize)
	}
	client, err := newClient("EmbedderConfig", cfg.APIKey, cfg.BaseURL, cfg.MaxRetries, cfg.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("openai: new embedder %s: %w", cfg.Model, err)
	}
	return &Embedder{model: cfg.Model, dims: cfg.Dimensions, batch: cmp.Or(cfg.BatchSize, DefaultEmbedBatch), client: client}, nil
}

// Name returns "openai:" and the model, and "@" and the dimensions when
// they were asked for: vectors of one name are comparable.
func (e *Embedder) Name() string {
	if e.dims > 0 {
		return "openai:" + e.model + "@" + strconv.Itoa(e.dims)
	}
	return "openai:" + e.model
}

// Embed returns the vectors of texts, asking for BatchSize texts per
// request. An empty text, which the API refuses, gets a zero vector
// without being sent. The answer is checked: one vector per text, each
// index once, every vector of one length (the asked one, if asked), every
// number finite. Failed requests are retried as for Generate; an HTTP
// error that ends a call is a *StatusError.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var send []int // the indexes of the texts to send
	for i, t := range texts {
		if t != "" {
			send = append(send, i)
		}
	}
	dims := e.dims
	for start := 0; start < len(send); start += e.batch {
		part := send[start:min(start+e.batch, len(send))]
		batch := make([]string, len(part))
		for j, i := range part {
			batch[j] = texts[i]
		}
		vs, err := e.call(ctx, batch)
		if err != nil {
			return nil, err
		}
		for j, v := range vs {
			if dims == 0 {
				dims = len(v)
			}
			if len(v) != dims || len(v) == 0 {
				return nil, fmt.Errorf("openai %s: embeddings: a vector of %d numbers where the others have %d", e.model, len(v), dims)
			}
			out[part[j]] = v
		}
	}
	for i := range out {
		if out[i] == nil {
			out[i] = make([]float32, dims)
		}
	}
	return out, nil
}

// call makes one embeddings request for texts, none empty.
func (e *Embedder) call(ctx context.Context, texts []string) ([][]float32, error) {
	params := sdk.EmbeddingNewParams{
		Input:          sdk.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Model:          sdk.EmbeddingModel(e.model),
		EncodingFormat: sdk.EmbeddingNewParamsEncodingFormatFloat,
	}
	if e.dims > 0 {
		params.Dimensions = sdk.Int(int64(e.dims))
	}
	ctx = adapter.WithAttempts(ctx)
	resp, err := e.client.Embeddings.New(ctx, params)
	if err != nil {
		return nil, adapter.Failure(ctx, "openai "+e.model, err, status)
	}
	if len(resp.Data) != len(texts) {
		return nil, fmt.Errorf("openai %s: embeddings: %d vectors for %d texts", e.model, len(resp.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		i := d.Index
		if i < 0 || int(i) >= len(texts) || out[i] != nil {
			return nil, fmt.Errorf("openai %s: embeddings: index %d is out of range or given twice", e.model, i)
		}
		v := make([]float32, len(d.Embedding))
		for j, x := range d.Embedding {
			v[j] = float32(x)
			if f := float64(v[j]); math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("openai %s: embeddings: vector %d holds %v", e.model, i, x)
			}
		}
		out[i] = v
	}
	return out, nil
}
