// Package all registers every cairn store backend's URL scheme, for
// cairn.Open and, where the backend has long-term memory, longterm.Open.
// Import it for its side effect when a program should reach any store by
// URL:
//
//	import _ "github.com/cairnhq/cairn/store/all"
package all

import (
	_ "github.com/cairnhq/cairn/store/file"     // file:///dir
	_ "github.com/cairnhq/cairn/store/memory"   // memory:
	_ "github.com/cairnhq/cairn/store/mongodb"  // mongodb://…
	_ "github.com/cairnhq/cairn/store/postgres" // postgres://…
	_ "github.com/cairnhq/cairn/store/redis"    // redis://…
	_ "github.com/cairnhq/cairn/store/sqlite"   // sqlite:///path.db
)
