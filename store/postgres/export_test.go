package postgres

import "github.com/cairnhq/cairn"

// Translate is translate, for the tests of its error codes.
var Translate = translate

// ListQuery is the query of a List, for the tests of its plans.
func (s *Store) ListQuery(opts cairn.ListOptions) (string, []any, error) { return s.listQuery(opts) }
