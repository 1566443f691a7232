package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/postgres"
)

// BenchmarkLongTerm puts and searches at 1,000 and 10,000 items; see
// lttest.Bench. Each size is a namespace (a schema) of its own, analysed
// after the fill (autovacuum may be off).
func BenchmarkLongTerm(b *testing.B) {
	d := dsn(b)
	lttest.Bench(b, func(b *testing.B) longterm.Store {
		ns := "ltb_" + testenv.RandHex(6)
		dropSchemaLater(b, ns)
		s, err := postgres.OpenLongTerm(b.Context(), d, postgres.LongTermOptions{Options: longterm.Options{Namespace: ns}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return analysed{s, b}
	})
}

// analysed is a store that runs ANALYZE on its table at its first search.
type analysed struct {
	*postgres.LongTerm
	b *testing.B
}

func (a analysed) Search(ctx context.Context, opts longterm.SearchOptions) ([]longterm.Result, error) {
	if _, ok := analysedSchemas.LoadOrStore(a.Schema(), true); !ok {
		if _, err := adminPool(a.b).Exec(ctx, "ANALYZE "+pgx.Identifier{a.Schema(), "longterm_items"}.Sanitize()); err != nil {
			return nil, err
		}
	}
	return a.LongTerm.Search(ctx, opts)
}

var (
	analysedSchemas sync.Map
)
