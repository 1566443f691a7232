package longterm_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/longterm"
)

func TestTokens(t *testing.T) {
	cases := map[string][]string{
		"":                        nil,
		"Hello, World!":           {"hello", "world"},
		"teal-otter-17":           {"teal", "otter", "17"},
		"ada@example.com":         {"ada", "example", "com"},
		"Café CRÈME s'il":         {"café", "crème", "s", "il"},
		"你好 世界":                   {"你好", "世界"},
		"snake_case and $dollars": {"snake", "case", "and", "dollars"},
		"a\x00b\xffc":             {"a", "b", "c"},
		"Ⅻ ½ ²":                   {"ⅻ", "½", "²"},
	}
	for in, want := range cases {
		if got := longterm.Tokens(in); !slices.Equal(got, want) {
			t.Errorf("Tokens(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPhrases(t *testing.T) {
	got := longterm.Phrases(`teal-otter-17 "quoted" jazz JAZZ * NEAR(x) -- ok`)
	want := [][]string{{"teal", "otter", "17"}, {"quoted"}, {"jazz"}, {"near", "x"}, {"ok"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Phrases = %q, want %q", got, want)
	}
	var many []string
	for i := range 100 {
		many = append(many, strings.Repeat("w", i+1))
	}
	if got := longterm.Phrases(strings.Join(many, " ")); len(got) != longterm.MaxQueryPhrases || got[0][0] != "w" {
		t.Errorf("Phrases of 100 words: %d phrases, want the first %d", len(got), longterm.MaxQueryPhrases)
	}
}

func TestDeriveText(t *testing.T) {
	cases := map[string]string{
		`{"food":"pizza","since":2019,"ok":false,"tags":["a","b"],"x":null,"o":{"k":"v"}}`: "food pizza since 2019 ok false tags a b x o k v",
		`"just a string"`: "just a string",
		`12.5e3`:          "12.5e3",
		`null`:            "",
		`{"a":`:           "a",
	}
	for in, want := range cases {
		if got := longterm.DeriveText(json.RawMessage(in)); got != want {
			t.Errorf("DeriveText(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestValidateNamespace(t *testing.T) {
	for _, ok := range []string{"a", "users/ada", "agents/support/facts", "A-b_9/x", strings.Repeat("a", 128) + "/b"} {
		if err := longterm.ValidateNamespace(ok); err != nil {
			t.Errorf("ValidateNamespace(%q): %v", ok, err)
		}
	}
	bad := map[string]string{
		"":                               "it is empty",
		"/users":                         `starts with "/"`,
		"users/":                         `ends with "/"`,
		"users//ada":                     "empty segment at byte 6",
		"users/../x":                     `'.' at byte 6`,
		"users/a b":                      `' ' at byte 7`,
		"users/é":                        `'é' at byte 6`,
		strings.Repeat("a", 129):         "segment longer than 128",
		strings.Repeat("a/", 200):        "limit is 256",
		"users\\ada":                     `'\\' at byte 5`,
		"users/ada\x00":                  `'\x00' at byte 9`,
		strings.Repeat("ab/", 84) + "ab": "",
	}
	for in, want := range bad {
		err := longterm.ValidateNamespace(in)
		if want == "" {
			if err != nil {
				t.Errorf("ValidateNamespace of %d bytes: %v", len(in), err)
			}
			continue
		}
		var ie *longterm.InvalidError
		if !errors.Is(err, longterm.ErrInvalid) || !errors.As(err, &ie) || ie.What != "namespace" || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateNamespace(%.40q) = %v, want an InvalidError of the namespace saying %q", in, err, want)
		}
	}
	if err := longterm.ValidatePrefix(""); err != nil {
		t.Errorf("ValidatePrefix(\"\"): %v", err)
	}
	if err := longterm.ValidatePrefix("a/"); err == nil || !strings.Contains(err.Error(), "invalid prefix") {
		t.Errorf("ValidatePrefix(a/): %v", err)
	}
}

func TestValidateKey(t *testing.T) {
	for _, ok := range []string{"k", "favorite-food", "2026-12-04", "ada@example.com", "project:cairn", "a+b=c", "v1.2", ".hidden"} {
		if err := longterm.ValidateKey(ok); err != nil {
			t.Errorf("ValidateKey(%q): %v", ok, err)
		}
	}
	for in, want := range map[string]string{"": "empty", ".": "dots alone", "..": "dots alone", "a/b": `'/'`, "a b": `' '`, "ключ": `'к'`, strings.Repeat("k", 257): "limit is 256"} {
		if err := longterm.ValidateKey(in); !errors.Is(err, longterm.ErrInvalid) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "invalid key") {
			t.Errorf("ValidateKey(%.40q) = %v, want an error saying %q", in, err, want)
		}
	}
}

func TestPathOrder(t *testing.T) {
	ns := []string{"users-x", "users/ada-x", "users/ada/notes", "users", "users/adam", "users/ada", "user", "users/ada/notes/x", "a"}
	slices.SortFunc(ns, longterm.ComparePaths)
	want := []string{"a", "user", "users", "users/ada", "users/ada/notes", "users/ada/notes/x", "users/ada-x", "users/adam", "users-x"}
	if !slices.Equal(ns, want) {
		t.Errorf("path order: %q, want %q", ns, want)
	}
	lo, hi := longterm.PrefixRange("users/ada")
	for _, n := range want {
		k := longterm.PathOrder(n)
		if in := lo <= k && k < hi; in != longterm.InPrefix("users/ada", n) {
			t.Errorf("%s: in PrefixRange %v, InPrefix %v", n, in, !in)
		}
	}
}

func TestHashEmbedder(t *testing.T) {
	e := longterm.HashEmbedder{}
	if e.Name() != "hash-v1-256" {
		t.Errorf("Name() = %q", e.Name())
	}
	vs, err := e.Embed(t.Context(), []string{"my cats sleep", "my cats sleep", "cat", "sailing boats", "", "!!!"})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs[:4] {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if len(v) != 256 || math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d: length %d, norm² %v; want 256 and 1", i, len(v), n)
		}
	}
	if !slices.Equal(vs[0], vs[1]) {
		t.Error("the same text gave two vectors")
	}
	// The vectors are fixed, on every machine: a change of the hashing
	// must change Name, since stored vectors would no longer compare.
	small, _ := longterm.HashEmbedder{Dims: 8}.Embed(t.Context(), []string{"cat"})
	if want := []float32{0.90453404, 0, -0.30151135, 0, 0, 0, 0, 0.30151135}; !slices.Equal(small[0], want) {
		t.Errorf("the vector of cat in 8 dimensions is %v, was %v: give the new hashing a new Name", small[0], want)
	}
	if c1, c2 := longterm.Cosine(vs[0], vs[2]), longterm.Cosine(vs[3], vs[2]); c1 <= c2 {
		t.Errorf("cat is no closer to my cats sleep (%v) than to sailing boats (%v)", c1, c2)
	}
	for _, i := range []int{4, 5} {
		if slices.ContainsFunc(vs[i], func(x float32) bool { return x != 0 }) {
			t.Errorf("a text without a token got a vector that is not zero")
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed with a cancelled context: %v", err)
	}
	if _, err := (longterm.HashEmbedder{Dims: longterm.MaxVectorDims + 1}).Embed(t.Context(), []string{"x"}); err == nil {
		t.Error("Embed with too many dimensions: no error")
	}
}

func TestCosine(t *testing.T) {
	cases := []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 0}, []float32{2, 0}, 1},
		{[]float32{1, 0}, []float32{0, 3}, 0},
		{[]float32{1, 0}, []float32{-1, 0}, -1},
		{[]float32{1, 1}, []float32{1, 0}, 1 / math.Sqrt2},
		{[]float32{1}, []float32{1, 0}, 0},
		{[]float32{0, 0}, []float32{1, 0}, 0},
		{nil, nil, 0},
	}
	for _, c := range cases {
		if got := longterm.Cosine(c.a, c.b); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Cosine(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestOpen_Errors(t *testing.T) {
	if _, err := longterm.Open(t.Context(), "nosuch://x", longterm.Options{}); err == nil || !strings.Contains(err.Error(), `unknown scheme "nosuch"`) {
		t.Errorf("Open of an unknown scheme: %v", err)
	}
	if _, err := longterm.Open(t.Context(), "postgres://u:s3cret@h:bad/db", longterm.Options{}); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open of a malformed URL: %v, want an error without the password", err)
	}
	longterm.Register("lttest-scheme", func(context.Context, *url.URL, longterm.Options) (longterm.Store, error) {
		return nil, errors.New("opened")
	})
	if _, err := longterm.Open(t.Context(), "LTTEST-SCHEME://x", longterm.Options{}); err == nil || err.Error() != "opened" {
		t.Errorf("Open of a registered scheme: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Register of a scheme twice did not panic")
		}
	}()
	longterm.Register("lttest-scheme", func(context.Context, *url.URL, longterm.Options) (longterm.Store, error) { return nil, nil })
}
