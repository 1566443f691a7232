package cairn

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// SealedPrefix begins every token: "cairn1.<data key id>.<base64url of
// nonce, ciphertext and tag>". The data key ID is 8 characters.
const SealedPrefix = "cairn1."

// SealedType is the type of a sealed custom event and the part type that
// carries the token of a sealed message.user.
const SealedType = "cairn.sealed"

// ErrSealed is returned for a session whose events are sealed (encrypted)
// when no key is there to open them: a store opened without the key, or a
// program that reads the backend directly. store/crypt's ErrEncrypted is
// the same error.
var ErrSealed = errors.New("session is encrypted and no key is configured")

// SealedError names the session whose events are sealed, and the first
// sealed event. It wraps ErrSealed.
type SealedError struct {
	Session string
	Seq     int64
	Kind    Kind
	DataKey string // the ID of the data key that sealed it (not secret)
}

// Error names the session and the sealed event, and what to do.
func (e *SealedError) Error() string {
	return fmt.Sprintf("session %s is encrypted (seq %d, %s, is sealed by data key %s): open the store with its key (store/crypt) to read or continue it",
		e.Session, e.Seq, e.Kind, e.DataKey)
}

// Unwrap returns ErrSealed.
func (e *SealedError) Unwrap() error { return ErrSealed }

// SealToken returns the token of one sealed value: ciphertext (nonce,
// ciphertext and tag) sealed by the data key named dataKeyID (8
// characters of A-Z a-z 0-9).
func SealToken(dataKeyID string, ciphertext []byte) string {
	return SealedPrefix + dataKeyID + "." + base64.RawURLEncoding.EncodeToString(ciphertext)
}

// ParseSealToken splits a token into its data key ID and ciphertext; ok is
// false when tok is not a token.
func ParseSealToken(tok string) (dataKeyID string, ciphertext []byte, ok bool) {
	rest, ok := strings.CutPrefix(tok, SealedPrefix)
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

// SealedHints are the clear words a sealed event keeps for listings.
type SealedHints struct {
	Status RunStatus // run.finished: its status
	Reason string    // run.interrupted: InterruptApproval, or "sealed" for any other reason
}

// SealedData returns the data of a sealed event of kind whose ciphertext is
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
func SealedData(kind Kind, token, first string, h SealedHints) (json.RawMessage, bool) {
	var v any
	switch kind {
	case KindRunStarted:
		v = RunStarted{RunID: token}
	case KindMessageSystem:
		v = MessageSystem{Text: token}
	case KindMessageUser:
		v = MessageUser{Parts: []Part{{Type: "text", Text: first}, {Type: SealedType, Text: token}}}
	case KindModelResponse:
		v = ModelResponse{Text: token}
	case KindToolStarted:
		v = ToolStarted{CallID: token}
	case KindToolResult:
		v = ToolResult{CallID: token}
	case KindStateSet:
		v = StateSet{Deleted: []string{token}}
	case KindRunInterrupted:
		v = RunInterrupted{Reason: h.Reason, Pending: []ToolCall{{ID: token, Name: SealedType}}}
	case KindApprovalDecided:
		v = ApprovalDecided{CallID: token}
	case KindRunFinished:
		v = RunFinished{Status: h.Status, Output: token}
	case KindMemoryCompacted:
		v = MemoryCompacted{Summary: token}
	case KindCustom:
		p, _ := json.Marshal(token)
		v = Custom{Type: SealedType, Payload: p}
	default:
		return nil, false
	}
	b, err := json.Marshal(v)
	return b, err == nil
}

// SealedParts finds the tokens in the data of a stored event whose carrier
// field (the one SealedData fills) holds a token: the ciphertext's token,
// the first-message token of a message.user, and the clear hints. It does
// not check that every other field is empty; IsSealed does.
func SealedParts(kind Kind, data []byte) (token, first string, h SealedHints, ok bool) {
	if !bytes.Contains(data, []byte(SealedPrefix)) {
		return "", "", h, false
	}
	var d struct {
		RunID   string          `json:"run_id"`
		Text    string          `json:"text"`
		CallID  string          `json:"call_id"`
		Output  string          `json:"output"`
		Summary string          `json:"summary"`
		Status  RunStatus       `json:"status"`
		Reason  string          `json:"reason"`
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
		Deleted []string        `json:"deleted"`
		Parts   []Part          `json:"parts"`
		Pending []ToolCall      `json:"pending"`
	}
	if json.Unmarshal(data, &d) != nil {
		return "", "", h, false
	}
	switch kind {
	case KindRunStarted:
		token = d.RunID
	case KindMessageSystem, KindModelResponse:
		token = d.Text
	case KindMessageUser:
		if len(d.Parts) == 2 && d.Parts[1].Type == SealedType {
			first, token = d.Parts[0].Text, d.Parts[1].Text
		}
	case KindToolStarted, KindToolResult, KindApprovalDecided:
		token = d.CallID
	case KindStateSet:
		if len(d.Deleted) == 1 {
			token = d.Deleted[0]
		}
	case KindRunInterrupted:
		if len(d.Pending) == 1 && d.Pending[0].Name == SealedType {
			token, h.Reason = d.Pending[0].ID, d.Reason
		}
	case KindRunFinished:
		token, h.Status = d.Output, d.Status
	case KindMemoryCompacted:
		token = d.Summary
	case KindCustom:
		if d.Type == SealedType {
			_ = json.Unmarshal(d.Payload, &token)
		}
	}
	_, _, ok = ParseSealToken(token)
	return token, first, h, ok
}

// IsSealed reports whether e is in the sealed form of its kind, exactly:
// its carrier field holds a token and its data is what SealedData builds
// from that token and its clear words. An event whose data merely
// mentions a token (a model quoting one) is not sealed. The test costs one
// substring search for an event that holds no token.
func IsSealed(e Event) bool {
	tok, first, h, ok := SealedParts(e.Kind, e.Data)
	if !ok {
		return false
	}
	want, ok := SealedData(e.Kind, tok, first, h)
	if !ok {
		return false
	}
	a, err1 := Canonical(want)
	b, err2 := Canonical(e.Data)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// CheckUnsealed returns a *SealedError (wrapping ErrSealed) naming the
// first sealed event of events, or nil when none is sealed. Code that
// loads a session from a store that does not decrypt calls it before using
// the events, so that an encrypted session is refused, not read as
// ciphertext and continued in plaintext.
//
// SealToken, ParseSealToken, SealedData, SealedParts, IsSealed and
// CheckUnsealed build and recognise the sealed form (see SealedData)
// without any key, so that code which reads a store directly, not through
// the encrypting wrapper (the agent, a program that opened the backend by
// itself), can refuse a session it cannot read instead of taking
// ciphertext for text and adding plaintext after it. CheckUnsealed is the
// one call such code needs.
func CheckUnsealed(id string, events []Event) error {
	for _, e := range events {
		if IsSealed(e) {
			tok, _, _, _ := SealedParts(e.Kind, e.Data)
			dkid, _, _ := ParseSealToken(tok)
			return &SealedError{Session: id, Seq: e.Seq, Kind: e.Kind, DataKey: dkid}
		}
	}
	return nil
}
