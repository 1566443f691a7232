package mongodb

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairnhq/cairn"
)

// TestPostings: an event's entry holds its distinct tokens' hashes in
// order, the counts above one and the length; an entry that would not fit
// beside its envelope in a document keeps the tokens that fit, and the
// document stays under MongoDB's limit.
func TestPostings(t *testing.T) {
	e := cairn.MustEvent(cairn.KindMessageUser, "r", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "Otter, teal otter 17"}}})
	toks, tf, n := postings(e, 100)
	want := []string{TokenHash("otter"), TokenHash("teal"), TokenHash("17")}
	if fmt.Sprint(toks) != fmt.Sprint(want) || len(tf) != 1 || tf[TokenHash("otter")] != 2 || n != 4 {
		t.Errorf("postings = %v, %v, %d; want %v, {otter: 2}, 4", toks, tf, n, want)
	}
	if toks, tf, n := postings(cairn.MustEvent(cairn.KindMessageSystem, "r", cairn.MessageSystem{Text: "not indexed"}), 100); toks != nil || tf != nil || n != 0 {
		t.Errorf("postings of a system message = %v, %v, %d; want none", toks, tf, n)
	}

	// 300,000 distinct words and each twice: far more than fits beside
	// an envelope of 12 MiB.
	var b strings.Builder
	for i := range 300000 {
		fmt.Fprintf(&b, "w%d w%d ", i, i)
	}
	big := cairn.MustEvent(cairn.KindMessageUser, "r", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: b.String()}}})
	env := make([]byte, 12<<20)
	toks, tf, n = postings(big, len(env))
	if n != 600000 || len(toks) == 0 || len(toks) >= 300000 || toks[0] != TokenHash("w0") {
		t.Fatalf("postings of a large event: %d tokens kept, length %d; want the first ones, fewer than all, length 600000", len(toks), n)
	}
	doc, err := bson.Marshal(eventDoc{Session: strings.Repeat("s", 200), Seq: 1, Token: strings.Repeat("t", 24), Event: env, Toks: toks, TF: tf, TLen: n})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc) > maxDocBytes {
		t.Errorf("the document is %d bytes, over MongoDB's limit of %d", len(doc), maxDocBytes)
	}
}

// BenchmarkPostings measures what an append adds for the text index: the
// entry of a user message of 40 words.
func BenchmarkPostings(b *testing.B) {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog again ", 4)
	e := cairn.MustEvent(cairn.KindMessageUser, "r", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: text}}})
	for b.Loop() {
		postings(e, 300)
	}
}
