package crypt

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/wire"
)

// The sealed form: how a sealed event looks to a program without the key.

// TokenPrefix begins every token: "cairn1.<data key id>.<base64url of
// nonce, ciphertext and tag>". The data key ID is 8 characters.
const TokenPrefix = "cairn1."

// sealedType is the type of a sealed custom event and the part type that
// carries the token of a sealed message.user.
const sealedType = "cairn.sealed"

// sealToken returns the token of one sealed value: ciphertext (nonce,
// ciphertext and tag) sealed by the data key named dataKeyID (8
// characters of A-Z a-z 0-9).
func sealToken(dataKeyID string, ciphertext []byte) string {
	return TokenPrefix + dataKeyID + "." + base64.RawURLEncoding.EncodeToString(ciphertext)
}

// ParseToken splits a token into its data key ID and ciphertext; ok is
// false when tok is not a token.
func ParseToken(tok string) (dataKeyID string, ciphertext []byte, ok bool) {
	rest, ok := strings.CutPrefix(tok, TokenPrefix)
	if !ok {
		return "", nil, false
	}
	dkid, b64, ok := strings.Cut(rest, ".")
	if !ok || len(dkid) != 8 || b64 == "" {
		return "", nil, false
	}
	ct, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil {
		return "", nil, false
	}
	return dkid, ct, true
}

// sealedHints are the clear words a sealed event keeps for listings.
type sealedHints struct {
	Status cairn.Status // run.finished: its status
	Reason string       // run.interrupted: InterruptApproval, or "sealed" for any other reason
}

// sealedData returns the data of a sealed event of kind whose ciphertext is
// token (and, for message.user, whose first-message token is first). It
// reports false for memory.reset, whose data is always {} and is stored as
// it is, and for a kind it does not know.
//
// An encrypting store (store/crypt) keeps each event's envelope (seq, time,
// kind, run) clear and replaces its data by the sealed form of its kind: a
// valid value of the kind whose fields are all empty except one string,
// the token, which carries the ciphertext, and the few clear words a
// listing needs (the status of run.finished, whether a run.interrupted
// awaits an approval). A sealed message.user also carries a second token,
// the start of its text sealed on its own, for listings.
func sealedData(kind cairn.Kind, token, first string, h sealedHints) (json.RawMessage, bool) {
	var v any
	switch kind {
	case cairn.KindRunStarted:
		v = cairn.RunStarted{RunID: token}
	case cairn.KindMessageSystem:
		v = cairn.MessageSystem{Text: token}
	case cairn.KindMessageUser:
		v = cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: first}, {Type: sealedType, Text: token}}}
	case cairn.KindModelResponse:
		v = cairn.ModelResponse{Text: token}
	case cairn.KindToolStarted:
		v = cairn.ToolStarted{CallID: token}
	case cairn.KindToolResult:
		v = cairn.ToolResult{CallID: token}
	case cairn.KindStateSet:
		v = cairn.StateSet{Deleted: []string{token}}
	case cairn.KindRunInterrupted:
		v = cairn.RunInterrupted{Reason: h.Reason, Pending: []cairn.ToolCall{{ID: token, Name: sealedType}}}
	case cairn.KindApprovalDecided:
		v = cairn.ApprovalDecided{CallID: token}
	case cairn.KindRunFinished:
		v = cairn.RunFinished{Status: h.Status, Output: token}
	case cairn.KindMemoryCompacted:
		v = cairn.MemoryCompacted{Summary: token}
	case cairn.KindCustom:
		p, _ := json.Marshal(token)
		v = cairn.Custom{Type: sealedType, Payload: p}
	default:
		return nil, false
	}
	b, err := json.Marshal(v)
	return b, err == nil
}

// sealedParts finds the tokens in the data of a stored event whose carrier
// field (the one sealedData fills) holds a token: the ciphertext's token,
// the first-message token of a message.user, and the clear hints. It does
// not check that every other field is empty; IsSealed does.
func sealedParts(kind cairn.Kind, data []byte) (token, first string, h sealedHints, ok bool) {
	if !bytes.Contains(data, []byte(TokenPrefix)) {
		return "", "", h, false
	}
	var d struct {
		RunID   string           `json:"run_id"`
		Text    string           `json:"text"`
		CallID  string           `json:"call_id"`
		Output  string           `json:"output"`
		Summary string           `json:"summary"`
		Status  cairn.Status     `json:"status"`
		Reason  string           `json:"reason"`
		Type    string           `json:"type"`
		Payload json.RawMessage  `json:"payload"`
		Deleted []string         `json:"deleted"`
		Parts   []cairn.Part     `json:"parts"`
		Pending []cairn.ToolCall `json:"pending"`
	}
	if json.Unmarshal(data, &d) != nil {
		return "", "", h, false
	}
	switch kind {
	case cairn.KindRunStarted:
		token = d.RunID
	case cairn.KindMessageSystem, cairn.KindModelResponse:
		token = d.Text
	case cairn.KindMessageUser:
		if len(d.Parts) == 2 && d.Parts[1].Type == sealedType {
			first, token = d.Parts[0].Text, d.Parts[1].Text
		}
	case cairn.KindToolStarted, cairn.KindToolResult, cairn.KindApprovalDecided:
		token = d.CallID
	case cairn.KindStateSet:
		if len(d.Deleted) == 1 {
			token = d.Deleted[0]
		}
	case cairn.KindRunInterrupted:
		if len(d.Pending) == 1 && d.Pending[0].Name == sealedType {
			token, h.Reason = d.Pending[0].ID, d.Reason
		}
	case cairn.KindRunFinished:
		token, h.Status = d.Output, d.Status
	case cairn.KindMemoryCompacted:
		token = d.Summary
	case cairn.KindCustom:
		if d.Type == sealedType {
			_ = json.Unmarshal(d.Payload, &token)
		}
	}
	_, _, ok = ParseToken(token)
	return token, first, h, ok
}

// IsSealed reports whether e is in the sealed form of its kind, exactly:
// its carrier field holds a token and its data is what sealedData builds
// from that token and its clear words. An event whose data merely
// mentions a token (a model quoting one) is not sealed. The test costs one
// substring search for an event that holds no token.
func IsSealed(e cairn.Event) bool {
	tok, first, h, ok := sealedParts(e.Kind, e.Data)
	if !ok {
		return false
	}
	want, ok := sealedData(e.Kind, tok, first, h)
	if !ok {
		return false
	}
	a, err1 := wire.Canonical(want)
	b, err2 := wire.Canonical(e.Data)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// CheckUnsealed returns a *SealedError (wrapping ErrSealed) naming the
// first sealed event of events, or nil when none is sealed. Code that
// loads a session from a store that does not decrypt calls it before using
// the events, so that an encrypted session is refused, not read as
// ciphertext and continued in plaintext.
//
// sealToken, ParseToken, sealedData, sealedParts, IsSealed and
// CheckUnsealed build and recognise the sealed form (see sealedData)
// without any key, so that code which reads a store directly, not through
// the encrypting wrapper (the agent, a program that opened the backend by
// itself), can refuse a session it cannot read instead of taking
// ciphertext for text and adding plaintext after it. CheckUnsealed is the
// one call such code needs.
func CheckUnsealed(id string, events []cairn.Event) error {
	for _, e := range events {
		if IsSealed(e) {
			tok, _, _, _ := sealedParts(e.Kind, e.Data)
			dkid, _, _ := ParseToken(tok)
			return &SealedError{Session: id, Seq: e.Seq, Kind: e.Kind, DataKey: dkid}
		}
	}
	return nil
}
