package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/memory"
)

// embedRequest is what an embeddings request carries.
type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions"`
	EncodingFormat string   `json:"encoding_format"`
}

// embedServer is a local Embeddings endpoint that answers each text with
// the offline HashEmbedder's vector of it (as float64s), in reverse order
// of index, and records the requests. answer, if set, answers instead.
type embedServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []embedRequest
	auth     []string
	answer   func(w http.ResponseWriter, req embedRequest, n int) bool
}

func newEmbedServer(t *testing.T, dims int) *embedServer {
	t.Helper()
	s := &embedServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req embedRequest
		if r.URL.Path != "/embeddings" || json.Unmarshal(body, &req) != nil {
			http.Error(w, "bad request "+r.URL.Path+" "+string(body), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		n := len(s.requests)
		s.mu.Unlock()
		if s.answer != nil && s.answer(w, req, n) {
			return
		}
		vs, _ := longterm.HashEmbedder{Dims: dims}.Embed(r.Context(), req.Input)
		var data []string
		for i := len(vs) - 1; i >= 0; i-- {
			v, _ := json.Marshal(vs[i])
			data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%s}`, i, v))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","model":%q,"data":[%s],"usage":{"prompt_tokens":1,"total_tokens":1}}`, req.Model, strings.Join(data, ","))
	}))
	t.Cleanup(s.Close)
	return s
}

func TestEmbedder_Embed(t *testing.T) {
	srv := newEmbedServer(t, 32)
	e, err := NewEmbedder(EmbedderConfig{Model: "text-embedding-3-small", Dimensions: 32, BatchSize: 2, APIKey: "sk-test", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Name(); got != "openai:text-embedding-3-small@32" {
		t.Errorf("Name() = %q", got)
	}
	texts := []string{"ada likes pizza", "", "bob likes jazz", "rain", "umbrella stand"}
	got, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := longterm.HashEmbedder{Dims: 32}.Embed(t.Context(), texts)
	want[1] = make([]float32, 32) // an empty text: zeros, not sent
	for i := range texts {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("vector %d (%q) is not the server's, in its place", i, texts[i])
		}
	}
	var sent [][]string
	for i, r := range srv.requests {
		sent = append(sent, r.Input)
		if r.Model != "text-embedding-3-small" || r.Dimensions != 32 || r.EncodingFormat != "float" || srv.auth[i] != "Bearer sk-test" {
			t.Errorf("request %d: %+v, authorization %q", i, r, srv.auth[i])
		}
	}
	if w := [][]string{{"ada likes pizza", "bob likes jazz"}, {"rain", "umbrella stand"}}; !slices.EqualFunc(sent, w, slices.Equal) {
		t.Errorf("requests carried %q, want %q (batches of 2, the empty text left out)", sent, w)
	}
	if vs, err := e.Embed(t.Context(), nil); err != nil || len(vs) != 0 {
		t.Errorf("Embed of no text: %v, %v", vs, err)
	}
}

// TestEmbedder_Store puts items into a long-term store whose embedder is
// the OpenAI embedder, and searches by meaning: the vectors come from the
// server and are stored with its model's name.
func TestEmbedder_Store(t *testing.T) {
	srv := newEmbedServer(t, 64)
	e, err := NewEmbedder(EmbedderConfig{Model: "nomic-embed-text", BaseURL: srv.URL})
	if err != nil {
		t.Fatalf("a server other than OpenAI's needs no key: %v", err)
	}
	mem, err := memory.NewLongTerm(longterm.Options{Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	for k, text := range map[string]string{"cats": "my cats sleep all day", "boats": "sailing boats on the lake"} {
		if _, err := mem.Put(t.Context(), longterm.Item{Namespace: "u/ada", Key: k, Text: text}, longterm.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	it, err := mem.Get(t.Context(), "u/ada", "cats")
	if err != nil || it.VectorModel != "openai:nomic-embed-text" || len(it.Vector) != 64 {
		t.Fatalf("Get: %+v, %v; want a vector of 64 by openai:nomic-embed-text", it, err)
	}
	rs, err := mem.Search(t.Context(), longterm.SearchOptions{Query: "cat", Mode: longterm.ModeVector, Prefix: "u"})
	if err != nil || len(rs) == 0 || rs[0].Item.Key != "cats" {
		t.Errorf("vector search for cat: %+v, %v", rs, err)
	}
	if n := len(srv.requests); n != 3 {
		t.Errorf("%d requests, want 3 (two puts, one query)", n)
	}
}

func TestEmbedder_Errors(t *testing.T) {
	cases := []struct {
		name   string
		answer string
		status int
		want   string
	}{
		{"HTTP error", `{"error":{"message":"model not found","type":"invalid_request_error","code":"model_not_found"}}`, 404, "model not found"},
		{"too few vectors", `{"data":[{"index":0,"embedding":[1,2]}]}`, 200, "1 vectors for 2 texts"},
		{"index twice", `{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[1,2]}]}`, 200, "given twice"},
		{"index out of range", `{"data":[{"index":0,"embedding":[1,2]},{"index":5,"embedding":[1,2]}]}`, 200, "out of range"},
		{"lengths differ", `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1,2,3]}]}`, 200, "3 numbers where the others have 2"},
		{"too large", `{"data":[{"index":0,"embedding":[1e300,2]},{"index":1,"embedding":[1,2]}]}`, 200, "holds 1e+300"},
		{"not JSON", `{"data":`, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newEmbedServer(t, 8)
			srv.answer = func(w http.ResponseWriter, _ embedRequest, _ int) bool {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				io.WriteString(w, c.answer)
				return true
			}
			e, err := NewEmbedder(EmbedderConfig{Model: "m", BaseURL: srv.URL, MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Embed(t.Context(), []string{"a", "b"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Embed: %v, want an error saying %q", err, c.want)
			}
			if c.status != 200 {
				var se *StatusError
				if !errors.As(err, &se) || se.StatusCode != c.status || se.Attempts != 1 {
					t.Errorf("Embed: %#v, want a *StatusError of %d after one attempt", err, c.status)
				}
			}
		})
	}
}

// TestEmbedder_Retry checks that a failed request is made again.
func TestEmbedder_Retry(t *testing.T) {
	srv := newEmbedServer(t, 8)
	srv.answer = func(w http.ResponseWriter, _ embedRequest, n int) bool {
		if n > 1 {
			return false
		}
		w.Header().Set("Retry-After-Ms", "1")
		http.Error(w, `{"error":{"message":"busy"}}`, http.StatusServiceUnavailable)
		return true
	}
	e, err := NewEmbedder(EmbedderConfig{Model: "m", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if vs, err := e.Embed(t.Context(), []string{"a"}); err != nil || len(vs) != 1 || len(vs[0]) != 8 {
		t.Fatalf("Embed after a 503: %v, %v", vs, err)
	}
	if len(srv.requests) != 2 {
		t.Errorf("%d requests, want 2", len(srv.requests))
	}
}

func TestNewEmbedder_Errors(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvBaseURL, "")
	cases := []struct {
		cfg  EmbedderConfig
		want string
	}{
		{EmbedderConfig{APIKey: "k"}, "EmbedderConfig.Model is empty"},
		{EmbedderConfig{Model: "m", APIKey: "k", Dimensions: -1}, "Dimensions -1"},
		{EmbedderConfig{Model: "m", APIKey: "k", BatchSize: 5000}, "BatchSize 5000"},
		{EmbedderConfig{Model: "m"}, "OPENAI_API_KEY or EmbedderConfig.APIKey"},
	}
	for _, c := range cases {
		if _, err := NewEmbedder(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewEmbedder(%+v): %v, want an error saying %q", c.cfg, err, c.want)
		}
	}
	if _, err := NewEmbedder(EmbedderConfig{Model: "m"}); !errors.Is(err, ErrNoAPIKey) {
		t.Errorf("NewEmbedder without a key: %v, want ErrNoAPIKey", err)
	}
	e, err := NewEmbedder(EmbedderConfig{Model: "text-embedding-3-large", APIKey: "k"})
	if err != nil || e.Name() != "openai:text-embedding-3-large" {
		t.Errorf("Name of an embedder with the model's dimensions: %v, %v", e, err)
	}
}
