package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// Translate is translate, for the tests of its error codes.
var Translate = translate

// ListQuery is the query of a List, for the tests of its plans.
func (s *Store) ListQuery(opts cairn.ListOptions) (string, []any, error) { return s.listQuery(opts) }

// LoadEventsQuery is Load's query of the events from a seq, for the tests
// of its plan.
func (s *Store) LoadEventsQuery() string { return s.sql.loadEvents }

// SnapshotQueries returns the statements of PutSnapshot, LoadSnapshot and
// DropSnapshot.
func (s *Store) SnapshotQueries() (put, load, drop string) {
	return s.sql.putSnapshot, s.sql.loadSnapshot, s.sql.dropSnapshot
}

// LongTermTextQuery returns the query a text search for phrases under
// prefix runs, and its arguments.
func (s *LongTerm) LongTermTextQuery(phrases [][]string, prefix string) (string, []any) {
	return s.textQuery(ltdriver.Search{Phrases: phrases, Prefix: prefix, Limit: 10, Candidates: 10}, TSQuery(phrases))
}

// SearchQuery returns the query a Search for query runs, and its
// arguments.
func (s *Store) SearchQuery(query string) (string, []any) {
	_, args := s.searchArgs(query)
	return s.sql.search, args
}

// EncodeAll is encodeAll: the seqs and envelopes an append stores.
var EncodeAll = encodeAll

// MigrateTo brings schema up to migration version v (not beyond), as an
// older cairn would have left it.
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, schema string, v int) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return migrateTx(ctx, tx, schema, v) })
}
