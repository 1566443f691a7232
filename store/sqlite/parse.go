package sqlite

import (
	"bytes"

	"github.com/cairnhq/cairn"
)

// parseEnvelope decodes a stored envelope with cairn.ParseEnvelope and
// copies its data out of the row's buffer.
func parseEnvelope(line []byte) (cairn.Event, bool) {
	e, ok := cairn.ParseEnvelope(line)
	if ok {
		e.Data = bytes.Clone(e.Data)
	}
	return e, ok
}
