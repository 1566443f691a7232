// Package words makes text for benchmarks: the texts and queries of the
// long-term memory benchmarks (cairn bench --memory, the backends' Go
// benchmarks), the same words in each.
package words

import (
	"math/rand/v2"
	"strings"
)

// Words is a vocabulary of 20,000 made-up words, drawn with a Zipf law as
// the words of prose are.
type Words struct {
	list []string
	zipf *rand.Zipf
	pick *rand.Rand
}

// New returns the vocabulary, the same whatever the seed, with draws
// that follow from seed.
func New(seed uint64) *Words {
	r := rand.New(rand.NewPCG(seed, 1))
	w := &Words{zipf: rand.NewZipf(r, 1.1, 2, 19999), pick: rand.New(rand.NewPCG(seed, 3))}
	v := rand.New(rand.NewPCG(7, 1))
	for range 20000 {
		var b strings.Builder
		for range 3 + v.IntN(6) {
			b.WriteByte(byte('a' + v.IntN(26)))
		}
		w.list = append(w.list, b.String())
	}
	return w
}

// Text returns n words drawn by frequency, separated by spaces.
func (w *Words) Text(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = w.list[w.zipf.Uint64()]
	}
	return strings.Join(out, " ")
}

// Query returns two words of middling frequency (ranks 200 to 2,000).
func (w *Words) Query() string {
	return w.list[200+w.pick.IntN(1800)] + " " + w.list[200+w.pick.IntN(1800)]
}

// At returns the word of the given rank by frequency (0 the most
// frequent), taken modulo the vocabulary's size.
func (w *Words) At(rank int) string { return w.list[rank%len(w.list)] }
