package driver

import "github.com/cairnhq/cairn"

// PrefixRange returns the range of session IDs that start with prefix, for
// a store that serves cairn.ListOptions.Prefix from an ordered index on the
// ID (bytewise order): the IDs id with lo <= id < hi. IDs are ASCII, so hi
// is prefix with its last byte incremented. ok is false when no session ID
// can start with prefix (it is longer than an ID or holds a character no ID
// has): such a List matches nothing and needs no query. An empty prefix
// has no range; callers check for it first.
func PrefixRange(prefix string) (lo, hi string, ok bool) {
	if cairn.ValidateID(prefix) != nil {
		return "", "", false
	}
	end := []byte(prefix)
	end[len(end)-1]++
	return prefix, string(end), true
}
