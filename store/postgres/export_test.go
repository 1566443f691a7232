package postgres

import (
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
