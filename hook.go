package cairn

import "github.com/cairnhq/cairn/internal/corehook"

// The envelope codec, for package driver (see internal/corehook).
func init() {
	corehook.AppendEnvelope = appendEnvelope
	corehook.ParseEnvelope = parseEnvelope
}
