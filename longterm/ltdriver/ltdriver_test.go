package ltdriver_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// TestScore checks BM25 by hand on a small corpus, and that the
// statistics span every index given whatever keep says.
func TestScore(t *testing.T) {
	a, b := ltdriver.NewIndex(), ltdriver.NewIndex()
	a.Set("1", "n", "jazz jazz piano")
	a.Set("2", "n", "piano lessons")
	b.Set("3", "n", "jazz club tonight late")
	b.Set("4", "n", "!!!")          // no token: length 0, counted
	a.Set("2", "n", "piano lesson") // replaced
	a.Set("5", "n", "gone")
	a.Remove("5")
	got := ltdriver.Score([]*ltdriver.Index{a, b}, [][]string{{"jazz"}}, func(x *ltdriver.Index, id string) bool { return id != "3" })
	// N = 4 documents of 4, 3, 5 and 1 tokens (their texts' and one for
	// the namespace): avgdl 3.25; "jazz" in 2 documents.
	idf := math.Log((4 - 2 + 0.5) / (2 + 0.5))
	if idf <= 0 {
		idf = 1e-6
	}
	want := idf * 2 * 2.2 / (2 + 1.2*(0.25+0.75*4/3.25))
	if len(got[b]) != 0 || len(got[a]) != 1 || math.Abs(got[a]["1"]-want) > 1e-12 {
		t.Errorf("Score(jazz) = %v, want only 1 of a, %v", got, want)
	}
	got = ltdriver.Score([]*ltdriver.Index{a, b}, [][]string{{"jazz", "piano"}, {"club"}}, nil)
	if len(got[a]) != 1 || len(got[b]) != 1 || got[a]["1"] <= 0 || got[b]["3"] <= 0 {
		t.Errorf("Score(\"jazz piano\" club) = %v, want 1 (the phrase in a row) and 3", got)
	}
	if got := ltdriver.Score([]*ltdriver.Index{a}, [][]string{{"piano", "jazz"}}, nil); len(got[a]) != 0 {
		t.Errorf("a phrase out of order matched: %v", got)
	}
	if got := ltdriver.Score([]*ltdriver.Index{a}, [][]string{{"gone"}}, nil); len(got[a]) != 0 {
		t.Errorf("a removed document matched: %v", got)
	}
}

func TestTopHits(t *testing.T) {
	top := ltdriver.NewTopHits(3, true)
	for i, v := range []float64{0.1, 0.9, 0.5, 0.9, 0.2, 0.7} {
		top.Offer(ltdriver.Hit{Namespace: "n", Key: fmt.Sprint("k", i), Vector: v})
	}
	var got []string
	for _, h := range top.Hits() {
		got = append(got, fmt.Sprintf("%s=%v", h.Key, h.Vector))
	}
	if want := []string{"k1=0.9", "k3=0.9", "k5=0.7"}; !slices.Equal(got, want) {
		t.Errorf("TopHits = %v, want %v", got, want)
	}
}

func TestRank(t *testing.T) {
	q := ltdriver.Search{Mode: longterm.ModeHybrid, Weight: 0.25, Limit: 3}
	text := []ltdriver.Hit{{Namespace: "a", Key: "x", Text: 4}, {Namespace: "a", Key: "y", Text: 2}}
	vec := []ltdriver.Hit{{Namespace: "a", Key: "y", Vector: 0.8}, {Namespace: "a", Key: "z", Vector: -0.5}, {Namespace: "a/b", Key: "w", Vector: 0.5}}
	got := ltdriver.Rank(q, text, vec)
	var keys []string
	for _, r := range got {
		keys = append(keys, fmt.Sprintf("%s=%.3f", r.Key, r.Score))
	}
	// y: .25*.5+.75*.8 = .725; w: .375; x: .25; z: 0 (cut by the limit).
	if want := []string{"y=0.725", "w=0.375", "x=0.250"}; !slices.Equal(keys, want) {
		t.Errorf("Rank = %v, want %v", keys, want)
	}
}

func TestCursor(t *testing.T) {
	c := ltdriver.Cursor{Namespace: "users/ada", Key: "k:1"}
	got, err := ltdriver.ParseCursor(c.Encode())
	if err != nil || got != c {
		t.Errorf("ParseCursor(Encode()) = %v, %v", got, err)
	}
	for _, bad := range []string{"!!", "YQ", "Li4AYQ"} {
		if _, err := ltdriver.ParseCursor(bad); err == nil {
			t.Errorf("ParseCursor(%q): no error", bad)
		}
	}
	if !c.After("users/ada", "k:2") || c.After("users/ada", "k:1") || !c.After("users/ada/x", "a") || c.After("users", "z") || !c.After("users/ada-x", "a") {
		t.Error("Cursor.After does not follow path order")
	}
}

// TestFind checks that Find runs only the sides a search can find with,
// ranks what they find, and returns a side's error.
func TestFind(t *testing.T) {
	ctx := t.Context()
	var ran []string
	side := func(name string, h ltdriver.Hit, err error) func(context.Context, ltdriver.Search) ([]ltdriver.Hit, error) {
		return func(context.Context, ltdriver.Search) ([]ltdriver.Hit, error) {
			ran = append(ran, name)
			return []ltdriver.Hit{h}, err
		}
	}
	text := side("text", ltdriver.Hit{Namespace: "n", Key: "a", Text: 2}, nil)
	vector := side("vector", ltdriver.Hit{Namespace: "n", Key: "b", Vector: 0.5}, nil)
	hybrid := ltdriver.Search{Mode: longterm.ModeHybrid, Phrases: [][]string{{"x"}}, Vector: []float32{1}, Weight: 0.5, Limit: 10}
	got, err := ltdriver.Find(ctx, hybrid, text, vector)
	if err != nil || len(got) != 2 || got[0].Key != "a" || got[1].Key != "b" || !slices.Equal(ran, []string{"text", "vector"}) {
		t.Errorf("hybrid: %+v, %v, sides run %v", got, err, ran)
	}
	for _, s := range []ltdriver.Search{
		{Mode: longterm.ModeHybrid, Limit: 10},                             // no phrase, no vector
		{Mode: longterm.ModeText, Vector: []float32{1}, Limit: 10},         // text mode, no phrase
		{Mode: longterm.ModeVector, Phrases: [][]string{{"x"}}, Limit: 10}, // vector mode, no vector
	} {
		ran = nil
		if got, err := ltdriver.Find(ctx, s, text, vector); err != nil || len(got) != 0 || len(ran) != 0 {
			t.Errorf("%+v: %+v, %v, sides run %v; want none", s, got, err, ran)
		}
	}
	fail := errors.New("down")
	if _, err := ltdriver.Find(ctx, hybrid, text, side("vector", ltdriver.Hit{}, fail)); !errors.Is(err, fail) {
		t.Errorf("a side's error: %v", err)
	}
}

// TestScoreTokens checks that ScoreTokens scores as Score does on the
// same documents, and that a document that is gone counts for nothing.
func TestScoreTokens(t *testing.T) {
	x := ltdriver.NewIndex()
	texts := []string{"jazz jazz piano", "piano lessons", "jazz club tonight late"}
	var toks [][]string
	var lengths []float64
	total := 0.0
	for i, text := range texts {
		x.Set(fmt.Sprint(i), "n", text)
		toks = append(toks, longterm.Tokens(text))
		lengths = append(lengths, float64(len(toks[i])+1))
		total += lengths[i]
	}
	phrases := [][]string{{"jazz"}, {"piano", "lessons"}}
	want := ltdriver.Score([]*ltdriver.Index{x}, phrases, nil)[x]
	got := ltdriver.ScoreTokens(phrases, append(toks, nil), append(lengths, 0), 3, total/3)
	if len(got) != 4 || got[3] != 0 {
		t.Fatalf("ScoreTokens = %v, want 4 scores, the last 0", got)
	}
	for i := range texts {
		if math.Abs(got[i]-want[fmt.Sprint(i)]) > 1e-12 {
			t.Errorf("document %d: %v, Score gives %v", i, got[i], want[fmt.Sprint(i)])
		}
	}
}

// TestSessionNamespace: the default namespace for none, the one given,
// and an error wrapping cairn.ErrInvalidID for one that breaks the rules.
func TestSessionNamespace(t *testing.T) {
	if ns, err := ltdriver.SessionNamespace(longterm.Options{}); err != nil || ns != cairn.DefaultNamespace {
		t.Errorf("no namespace: %q, %v; want %q", ns, err, cairn.DefaultNamespace)
	}
	if ns, err := ltdriver.SessionNamespace(longterm.Options{Namespace: "tenant_a"}); err != nil || ns != "tenant_a" {
		t.Errorf("tenant_a: %q, %v", ns, err)
	}
	if ns, err := ltdriver.SessionNamespace(longterm.Options{Namespace: "no spaces"}); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("a bad namespace: %q, %v; want cairn.ErrInvalidID", ns, err)
	}
}

// TestGuard checks that each of Guard's methods refuses a closed store
// with cairn.ErrClosed before it looks at the arguments, and checks them
// while the store is open.
func TestGuard(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(g *ltdriver.Guard) error{
		"Put": func(g *ltdriver.Guard) error {
			_, err := g.Put(ctx, longterm.Options{}.WithDefaults(), longterm.Item{Namespace: "", Key: "k"}, longterm.PutOptions{})
			return err
		},
		"Key":             func(g *ltdriver.Guard) error { return g.Key("", "k") },
		"Delete":          func(g *ltdriver.Guard) error { return g.Delete("n", "k", -1) },
		"DeleteNamespace": func(g *ltdriver.Guard) error { return g.DeleteNamespace("") },
		"List": func(g *ltdriver.Guard) error {
			_, _, err := g.List(longterm.ListOptions{Limit: -1})
			return err
		},
		"Namespaces": func(g *ltdriver.Guard) error {
			_, err := g.Namespaces(longterm.NamespaceOptions{Depth: -1})
			return err
		},
		"Search": func(g *ltdriver.Guard) error {
			_, err := g.Search(ctx, longterm.Options{}.WithDefaults(), longterm.SearchOptions{Limit: -1})
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			var g ltdriver.Guard
			if err := call(&g); !errors.Is(err, longterm.ErrInvalid) {
				t.Errorf("open: got %v, want longterm.ErrInvalid", err)
			}
			g.Close()
			if err := call(&g); !errors.Is(err, cairn.ErrClosed) {
				t.Errorf("closed: got %v, want cairn.ErrClosed", err)
			}
		})
	}
}
