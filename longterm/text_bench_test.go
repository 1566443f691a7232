package longterm_test

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/longterm"
)

// benchText is about a kilobyte of an agent's text: words in both cases,
// digits and punctuation.
var benchText = strings.Repeat("The file lists 3 records.\nEach one has a \"name\" and a total; ", 14)

func BenchmarkTokens(b *testing.B) {
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		longterm.Tokens(benchText)
	}
}
