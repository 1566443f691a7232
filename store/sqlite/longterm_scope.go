package sqlite

import (
	"fmt"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// A file's long-term memory is divided by session namespace as its
// sessions are: the items of the default namespace are stored under
// their own namespaces, those of namespace X under "#X/" and theirs. No
// long-term namespace starts with '#', and '#' sorts before every
// character one starts with ('-' is the lowest), so the default
// namespace's items are the paths from "-" on and X's one prefix range.

// scopeMark begins the stored namespace of an item of a session namespace
// other than the default.
const scopeMark = "#"

// defaultFloor is the lowest path of the default namespace's items.
const defaultFloor = "-"

// scopeOf returns the stored prefix of the items of the session namespace
// of o: "" for the default namespace.
func scopeOf(o longterm.Options) (string, error) {
	ns, err := ltdriver.SessionNamespace(o)
	if err != nil {
		return "", fmt.Errorf("open sqlite long-term memory: %w", err)
	}
	if ns == cairn.DefaultNamespace {
		return "", nil
	}
	return scopeMark + ns + "/", nil
}

// stored returns the namespace ns as this store keeps it.
func (s *LongTerm) stored(ns string) string { return s.scope + ns }

// storedPrefix returns a prefix of List, Namespaces or Search (empty: every
// namespace) as this store keeps it: empty for every namespace of the
// default session namespace.
func (s *LongTerm) storedPrefix(prefix string) string {
	if prefix == "" {
		return strings.TrimSuffix(s.scope, "/")
	}
	return s.scope + prefix
}

// shown returns a stored namespace as the store's user names it.
func (s *LongTerm) shown(ns string) string { return strings.TrimPrefix(ns, s.scope) }

// pathRange returns the range of paths under a stored prefix: for ""
// (every namespace of the default session namespace) from defaultFloor
// on, with no end.
func pathRange(prefix string) (lo, hi string) {
	if prefix == "" {
		return defaultFloor, ""
	}
	return longterm.PrefixRange(prefix)
}

// scopedPath returns a path of SkipNamespaces (which knows the user's
// namespaces only) as this store keeps it.
func (s *LongTerm) scopedPath(p string) string {
	if s.scope == "" {
		return max(p, defaultFloor)
	}
	return longterm.PathOrder(s.scope) + p
}
