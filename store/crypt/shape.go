package crypt

import (
	"bytes"
	"encoding/json"

	"github.com/cairnhq/cairn"
)

// A sealed event keeps its kind, and its data keeps the shape of that
// kind, so that every backend validates and summarises it as it does any
// event: the ciphertext travels in one string field of the kind and every
// other field is empty, except the two words a listing needs, the status
// of run.finished and whether a run.interrupted waits for an approval.
// A sealed message.user carries a second token, the encrypted first
// characters of its text, which listings decrypt to show the session's
// first message.

// sealedType is the type of a sealed custom event and the part type of a
// sealed message.user.
const sealedType = "cairn.sealed"

// hints are the clear words a listing needs from a sealed event.
type hints struct {
	status cairn.RunStatus // run.finished
	reason string          // run.interrupted: "approval" or "sealed"
}

func hintsOf(kind cairn.Kind, plain []byte) hints {
	var h hints
	switch kind {
	case cairn.KindRunFinished:
		var d struct {
			Status cairn.RunStatus `json:"status"`
		}
		_ = json.Unmarshal(plain, &d)
		h.status = d.Status
	case cairn.KindRunInterrupted:
		var d struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(plain, &d)
		h.reason = "sealed"
		if d.Reason == cairn.InterruptApproval {
			h.reason = cairn.InterruptApproval
		}
	}
	return h
}

// shapeOf returns the sealed data of an event of kind whose ciphertext is
// tok (and, for message.user, whose first-message token is first). It
// reports false for memory.reset, whose data is always {} and is stored
// as it is.
func shapeOf(kind cairn.Kind, tok, first string, h hints) ([]byte, bool) {
	var v any
	switch kind {
	case cairn.KindRunStarted:
		v = cairn.RunStarted{RunID: tok}
	case cairn.KindMessageSystem:
		v = cairn.MessageSystem{Text: tok}
	case cairn.KindMessageUser:
		v = cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: first}, {Type: sealedType, Text: tok}}}
	case cairn.KindModelResponse:
		v = cairn.ModelResponse{Text: tok}
	case cairn.KindToolStarted:
		v = cairn.ToolStarted{CallID: tok}
	case cairn.KindToolResult:
		v = cairn.ToolResult{CallID: tok}
	case cairn.KindStateSet:
		v = cairn.StateSet{Deleted: []string{tok}}
	case cairn.KindRunInterrupted:
		v = cairn.RunInterrupted{Reason: h.reason, Pending: []cairn.ToolCall{{ID: tok, Name: sealedType}}}
	case cairn.KindApprovalDecided:
		v = cairn.ApprovalDecided{CallID: tok}
	case cairn.KindRunFinished:
		v = cairn.RunFinished{Status: h.status, Output: tok}
	case cairn.KindMemoryCompacted:
		v = cairn.MemoryCompacted{Summary: tok}
	case cairn.KindCustom:
		p, _ := json.Marshal(tok)
		v = cairn.Custom{Type: sealedType, Payload: p}
	default:
		return nil, false
	}
	b, err := json.Marshal(v)
	return b, err == nil
}

// tokensOf finds the tokens in the data of a stored event, if it has the
// sealed shape of its kind: the ciphertext, the first-message token of a
// message.user, and the clear hints. The caller checks the shape exactly by
// rebuilding it once the ciphertext has opened.
func tokensOf(kind cairn.Kind, data []byte) (tok, first string, h hints, ok bool) {
	var d struct {
		RunID   string           `json:"run_id"`
		Text    string           `json:"text"`
		CallID  string           `json:"call_id"`
		Output  string           `json:"output"`
		Summary string           `json:"summary"`
		Status  cairn.RunStatus  `json:"status"`
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
		tok = d.RunID
	case cairn.KindMessageSystem, cairn.KindModelResponse:
		tok = d.Text
	case cairn.KindMessageUser:
		if len(d.Parts) == 2 && d.Parts[1].Type == sealedType {
			first, tok = d.Parts[0].Text, d.Parts[1].Text
		}
	case cairn.KindToolStarted, cairn.KindToolResult, cairn.KindApprovalDecided:
		tok = d.CallID
	case cairn.KindStateSet:
		if len(d.Deleted) == 1 {
			tok = d.Deleted[0]
		}
	case cairn.KindRunInterrupted:
		if len(d.Pending) == 1 && d.Pending[0].Name == sealedType {
			tok, h.reason = d.Pending[0].ID, d.Reason
		}
	case cairn.KindRunFinished:
		tok, h.status = d.Output, d.Status
	case cairn.KindMemoryCompacted:
		tok = d.Summary
	case cairn.KindCustom:
		if d.Type == sealedType {
			_ = json.Unmarshal(d.Payload, &tok)
		}
	}
	return tok, first, h, isToken(tok)
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	ca, err1 := cairn.Canonical(a)
	cb, err2 := cairn.Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// emptyObject reports whether data is the JSON object {}.
func emptyObject(data []byte) bool { return sameJSON(data, []byte("{}")) }
