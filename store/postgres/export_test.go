package postgres

import "github.com/cairnhq/cairn"

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
