package crypt

import (
	"encoding/json"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/wire"
)

// hintsOf returns the clear words a listing needs from an event's
// plaintext data.
func hintsOf(kind cairn.Kind, plain []byte) sealedHints {
	var h sealedHints
	switch kind {
	case cairn.KindRunFinished:
		var d struct {
			Status cairn.Status `json:"status"`
		}
		_ = json.Unmarshal(plain, &d)
		h.Status = d.Status
	case cairn.KindRunInterrupted:
		var d struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(plain, &d)
		h.Reason = "sealed"
		if d.Reason == cairn.InterruptApproval {
			h.Reason = cairn.InterruptApproval
		}
	}
	return h
}

// shapeOf returns the sealed data of an event of kind; see
// sealedData.
//
// A sealed event keeps its kind, and its data keeps the shape of that
// kind, so that every backend validates and summarises it as it does any
// event: the ciphertext travels in one string field of the kind and every
// other field is empty, except the two words a listing needs (hintsOf),
// the status of run.finished and whether a run.interrupted waits for an
// approval. A sealed message.user carries a second token, the encrypted
// first characters of its text, which listings decrypt to show the
// session's first message.
func shapeOf(kind cairn.Kind, tok, first string, h sealedHints) ([]byte, bool) {
	return sealedData(kind, tok, first, h)
}

// tokensOf finds the tokens in the data of a stored event whose carrier
// field holds one; see sealedParts. The caller checks the shape
// exactly by rebuilding it once the ciphertext has opened.
func tokensOf(kind cairn.Kind, data []byte) (tok, first string, h sealedHints, ok bool) {
	return sealedParts(kind, data)
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool { return wire.SameJSON(a, b) }

// emptyObject reports whether data is the JSON object {}.
func emptyObject(data []byte) bool { return sameJSON(data, []byte("{}")) }
