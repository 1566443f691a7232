package postgres_test

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/store/postgres"
)

// BenchmarkTSVector is the tsvector of about a kilobyte of an agent's
// text, as an append makes it for each event with text.
func BenchmarkTSVector(b *testing.B) {
	text := strings.Repeat("The file lists 3 records.\nEach one has a \"name\" and a total; ", 14)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		postgres.TSVector(text)
	}
}
