package sqlite

import (
	"bytes"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// parseEnvelope decodes a stored envelope with driver.ParseEnvelope and
// copies its data out of the row's buffer.
func parseEnvelope(line []byte) (cairn.Event, bool) {
	e, ok := driver.ParseEnvelope(line)
	if ok {
		e.Data = bytes.Clone(e.Data)
	}
	return e, ok
}
