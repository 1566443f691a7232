package cairn

import (
	"strings"

	"github.com/cairnhq/cairn/internal/text"
)

// SearchText returns the text of e that a store indexes (driver.Searcher):
// the text of a user message, a model response's text and each tool call's name and
// arguments, a tool result's name and output, a compaction's summary, a
// failed run's error message, and a custom event's type and payload (but
// for cairn's own bookkeeping types, such as a data key's). The strings of
// JSON arguments and payloads are taken without their quotes and braces.
// Other kinds (system messages among them, the same in every session of
// an agent) and an event whose data was sealed by encryption at rest
// give "".
func (e Event) SearchText() string {
	switch e.Kind {
	case KindMessageUser, KindModelResponse, KindToolResult, KindMemoryCompacted, KindRunFinished, KindCustom:
	default:
		return "" // not decoded: most events of a run are of these kinds
	}
	v, err := e.value()
	if err != nil {
		return ""
	}
	var parts []string
	switch d := v.(type) {
	case *MessageUser:
		for _, p := range d.Parts {
			if p.Type == "text" {
				parts = append(parts, p.Text)
			}
		}
	case *ModelResponse:
		parts = append(parts, d.Text)
		for _, c := range d.ToolCalls {
			parts = append(parts, c.Name, text.JSONText(c.Args))
		}
	case *ToolResult:
		parts = append(parts, d.Name, d.Output)
	case *MemoryCompacted:
		parts = append(parts, d.Summary)
	case *RunFinished:
		if d.Error != nil {
			parts = append(parts, d.Error.Message)
		}
	case *Custom:
		if strings.HasPrefix(d.Type, "cairn.") && !searchedTypes[d.Type] {
			return "" // cairn's own bookkeeping: keys, markers, trace links
		}
		parts = append(parts, d.Type, text.JSONText(d.Payload))
	}
	var b strings.Builder
	size := 0
	for _, p := range parts {
		size += len(p) + 1
	}
	b.Grow(size)
	for _, p := range parts {
		if p == "" {
			continue
		}
		if sealedToken(p) {
			return "" // the sealed form: its clear words are not the event's
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

// searchedTypes are the custom event types of cairn's own whose payload
// is an application's: a durable step's result (package steps) and a
// queued run's input (package worker). The other "cairn." types are
// bookkeeping (a data key, an encryption marker, a trace link, an
// abandoned import) and are not indexed.
var searchedTypes = map[string]bool{"cairn.step": true, "cairn.queued": true}

// sealedToken reports whether s has the form of a token of encryption at
// rest (store/crypt): "cairn1.", a data key ID of 8 letters and digits, a
// dot and base64url.
func sealedToken(s string) bool {
	rest, ok := strings.CutPrefix(s, "cairn1.")
	if !ok || len(rest) < 10 || rest[8] != '.' {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if i == 8 {
			continue
		}
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i < 8 || c != '-' && c != '_') {
			return false
		}
	}
	return true
}
