package crypt

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// sealedEvent returns an event of kind in the sealed form, as store/crypt
// writes it.
func sealedEvent(t *testing.T, seq int64, kind cairn.Kind, h sealedHints) cairn.Event {
	t.Helper()
	tok := sealToken("abcd1234", []byte("nonce-ciphertext-and-tag-bytes"))
	first := ""
	if kind == cairn.KindMessageUser {
		first = sealToken("abcd1234", []byte("first"))
	}
	data, ok := sealedData(kind, tok, first, h)
	if !ok {
		t.Fatalf("SealedData(%s) refused", kind)
	}
	return cairn.Event{V: 1, Seq: seq, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Kind: kind, Run: "r1", Data: data}
}

func TestIsSealed(t *testing.T) {
	kinds := []cairn.Kind{cairn.KindRunStarted, cairn.KindMessageSystem, cairn.KindMessageUser, cairn.KindModelResponse,
		cairn.KindToolStarted, cairn.KindToolResult, cairn.KindStateSet, cairn.KindRunInterrupted, cairn.KindApprovalDecided,
		cairn.KindRunFinished, cairn.KindMemoryCompacted, cairn.KindCustom}
	for i, k := range kinds {
		e := sealedEvent(t, int64(i+1), k, sealedHints{Status: cairn.StatusCompleted, Reason: "sealed"})
		if !IsSealed(e) {
			t.Errorf("%s in the sealed form: IsSealed = false (%s)", k, e.Data)
		}
		if _, err := cairn.ValidateEvents([]cairn.Event{e}, e.Seq); err != nil {
			t.Errorf("%s in the sealed form is not a valid event: %v", k, err)
		}
	}
	if _, ok := sealedData(cairn.KindMemoryReset, "x", "", sealedHints{}); ok {
		t.Error("SealedData(memory.reset) = ok; its data is always {}")
	}

	// What is not sealed: plain events, and plain events that quote a
	// token, in the carrier field or elsewhere.
	tok := sealToken("abcd1234", []byte("nonce-ciphertext-and-tag-bytes"))
	quoted := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	plain := []cairn.Event{
		{Kind: cairn.KindModelResponse, Data: quoted(cairn.ModelResponse{Text: "hello", Model: "offline"})},
		{Kind: cairn.KindModelResponse, Data: quoted(cairn.ModelResponse{Text: tok, Model: "offline"})},
		{Kind: cairn.KindModelResponse, Data: quoted(cairn.ModelResponse{Text: "it said " + tok})},
		{Kind: cairn.KindMessageUser, Data: quoted(cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: tok}}})},
		{Kind: cairn.KindToolResult, Data: quoted(cairn.ToolResult{CallID: tok, Name: "calc", Output: "3"})},
		{Kind: cairn.KindMemoryReset, Data: json.RawMessage(`{}`)},
		{Kind: cairn.KindModelResponse, Data: quoted(cairn.ModelResponse{Text: "cairn1.short"})},
	}
	for _, e := range plain {
		if IsSealed(e) {
			t.Errorf("plain %s %s: IsSealed = true", e.Kind, e.Data)
		}
	}
}

func TestParseSealToken(t *testing.T) {
	tok := sealToken("abcd1234", []byte{0, 1, 2, 250})
	dk, ct, ok := ParseToken(tok)
	if !ok || dk != "abcd1234" || string(ct) != string([]byte{0, 1, 2, 250}) {
		t.Fatalf("ParseSealToken(%q) = %q, %v, %v", tok, dk, ct, ok)
	}
	for _, bad := range []string{"", "cairn1.", "cairn1.abcd1234.", "cairn1.abc.AAAA", "cairn2.abcd1234.AAAA", "cairn1.abcd1234.!!!"} {
		if _, _, ok := ParseToken(bad); ok {
			t.Errorf("ParseSealToken(%q) = ok", bad)
		}
	}
}

// TestCheckUnsealed: a history with one sealed event is refused, naming the
// session and the first sealed seq; a plain history passes.
func TestCheckUnsealed(t *testing.T) {
	plain := cairn.MustEvent(cairn.KindMessageSystem, "r1", cairn.MessageSystem{Text: "hi"})
	plain.Seq = 1
	if err := CheckUnsealed("s1", []cairn.Event{plain}); err != nil {
		t.Errorf("plain history: %v", err)
	}
	evs := []cairn.Event{plain, sealedEvent(t, 2, cairn.KindModelResponse, sealedHints{})}
	err := CheckUnsealed("s1", evs)
	var se *SealedError
	if !errors.Is(err, cairn.ErrSealed) || !errors.As(err, &se) || se.Session != "s1" || se.Seq != 2 || se.DataKey != "abcd1234" {
		t.Fatalf("CheckUnsealed = %v, want a SealedError for s1 seq 2", err)
	}
	if !strings.Contains(err.Error(), "session s1 is encrypted") {
		t.Errorf("error %q does not say the session is encrypted", err)
	}
}
