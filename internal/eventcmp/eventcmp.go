// Package eventcmp compares events as a store gives them back: the
// session writers use it to tell whether an append whose outcome was
// unknown was written.
package eventcmp

import (
	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/wire"
)

// Same reports whether each event of a is the one at its place in b, which
// is at least as long: the same seq, kind, run and time, and the same data
// compared canonically (stores may keep JSON in their own spacing).
func Same(a, b []cairn.Event) bool {
	for i := range a {
		x, y := a[i], b[i]
		if x.Seq != y.Seq || x.Kind != y.Kind || x.Run != y.Run || !x.At.Equal(y.At) || !wire.SameJSON(x.Data, y.Data) {
			return false
		}
	}
	return true
}
