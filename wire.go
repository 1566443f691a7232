package cairn

import (
	"fmt"

	"github.com/cairnhq/cairn/internal/wire"
)

// appendEnvelope appends e's envelope to dst in the one form every store
// writes (driver.AppendEnvelope tells it). An error wraps ErrInvalidEvent.
func appendEnvelope(dst []byte, e Event) ([]byte, error) {
	b, err := wire.AppendEnvelope(dst, envelopeOf(e))
	if err != nil {
		return b, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	return b, nil
}

func envelopeOf(e Event) wire.Envelope {
	return wire.Envelope{V: e.V, Seq: e.Seq, At: e.At, Kind: string(e.Kind), Run: e.Run, Data: e.Data}
}

func eventOf(w wire.Envelope) Event {
	return Event{V: w.V, Seq: w.Seq, At: w.At, Kind: Kind(w.Kind), Run: w.Run, Data: w.Data}
}
