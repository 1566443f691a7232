package longterm

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
)

// Embedder turns texts into vectors, for semantic search. A store given
// one (Options.Embedder) computes the vector of every item Put without one
// and of every query Search without one; vectors are compared in cairn, by
// cosine similarity, so no backend needs a vector index.
type Embedder interface {
	// Name names the vector space: the model and anything else that
	// changes the vectors ("hash-v1-256", "openai:text-embedding-3-small").
	// It is stored with each vector (Item.VectorModel), and a search
	// compares only vectors of its own name, so that vectors of two
	// models are never compared.
	Name() string
	// Embed returns one vector per text, in order, all of one length. A
	// text with nothing to embed may get a zero vector.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// HashEmbedder is an Embedder that needs no model and no network: it
// hashes each token of a text, and each three-letter piece of a token,
// into one of Dims dimensions with a sign (the hashing trick), and scales
// the sum to unit length. Texts that share words, or parts of words, get
// close vectors; it knows nothing of meaning beyond that. It is
// deterministic (the same text always gives the same vector, on every
// machine), fast, and the offline default, as the offline model is.
type HashEmbedder struct {
	// Dims is the vector length; 0 means 256.
	Dims int
}

var _ Embedder = HashEmbedder{}

func (h HashEmbedder) dims() int {
	if h.Dims <= 0 {
		return 256
	}
	return h.Dims
}

// Name returns "hash-v1-" and the vector length.
func (h HashEmbedder) Name() string { return fmt.Sprintf("hash-v1-%d", h.dims()) }

// Embed returns the vectors of texts. A text without a token gets a zero
// vector. It fails only for Dims above MaxVectorDims or a cancelled ctx.
func (h HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	n := h.dims()
	if n > MaxVectorDims {
		return nil, fmt.Errorf("hash embedder: %d dimensions, the limit is %d", n, MaxVectorDims)
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v := make([]float64, n)
		for _, tok := range Tokens(t) {
			add(v, "w:"+tok, 1)
			r := []rune("^" + tok + "$")
			for j := 0; j+3 <= len(r); j++ {
				add(v, "g:"+string(r[j:j+3]), 0.5)
			}
		}
		out[i] = unit(v)
	}
	return out, nil
}

// add adds w to the dimension feature hashes to, with the sign the hash
// gives it.
func add(v []float64, feature string, w float64) {
	h := fnv.New64a()
	h.Write([]byte(feature))
	x := h.Sum64()
	if x>>63 == 1 {
		w = -w
	}
	v[x%uint64(len(v))] += w
}

// unit returns v scaled to length 1 as float32, or zeros if v is zero.
func unit(v []float64) []float32 {
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	out := make([]float32, len(v))
	if sum == 0 {
		return out
	}
	norm := math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

// Cosine returns the cosine similarity of a and b, in [-1, 1]: 0 when
// their lengths differ or either is zero.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	c := dot / (math.Sqrt(na) * math.Sqrt(nb))
	return max(-1, min(1, c))
}
