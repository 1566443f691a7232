package agent_test

import (
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/sqlite"
)

// BenchmarkSession_Run measures one turn with a tool call (four appends:
// the input, the model response asking for calc, its result, the answer)
// with the offline model, so the figure is the runtime's and the store's.
func BenchmarkSession_Run(b *testing.B) {
	stores := map[string]func(b *testing.B) cairn.Store{
		"memory": func(b *testing.B) cairn.Store {
			st, err := cairn.Open(b.Context(), "memory:", cairn.StoreOptions{Namespace: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
		"sqlite": func(b *testing.B) cairn.Store {
			st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "cairn.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
	}
	for _, name := range []string{"memory", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			st := stores[name](b)
			defer st.Close()
			s, err := offlineAgent(st).Start(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.Run(b.Context(), "calc 2*(3+4)")
				if err != nil || res.Status != cairn.StatusCompleted {
					b.Fatal(res, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/4, "µs/append")
		})
	}
}
