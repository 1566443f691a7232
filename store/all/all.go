// Package all registers every cairn store backend's URL scheme. Import it
// for its side effect when a program should reach any store by URL:
//
//	import _ "github.com/cairnhq/cairn/store/all"
package all

import (
	_ "github.com/cairnhq/cairn/store/memory" // memory:
)
