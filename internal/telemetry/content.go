package telemetry

import (
	"encoding/json"

	"github.com/cairnhq/cairn"
)

// part is a message part in the GenAI conventions' JSON form.
type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// InputMessages returns msgs as the conventions' gen_ai.input.messages
// JSON, leaving out the system messages (gen_ai.system_instructions holds
// the instructions).
func InputMessagesJSON(msgs []cairn.Message) string {
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == cairn.RoleSystem && !m.IsSummary() {
			continue
		}
		out = append(out, convert(m))
	}
	return marshal(out)
}

// SystemText returns the text of msgs' first system message: the
// instructions.
func SystemText(msgs []cairn.Message) string {
	for _, m := range msgs {
		if m.Role == cairn.RoleSystem && !m.IsSummary() {
			return m.Content
		}
	}
	return ""
}

// OutputMessagesJSON returns a model response as the conventions'
// gen_ai.output.messages JSON.
func OutputMessagesJSON(text string, calls []cairn.ToolCall, finish string) string {
	m := convert(cairn.Message{Role: cairn.RoleAssistant, Content: text, ToolCalls: calls})
	m.FinishReason = finish
	return marshal([]message{m})
}

func convert(m cairn.Message) message {
	out := message{Role: m.Role}
	switch {
	case m.Role == cairn.RoleTool:
		out.Parts = append(out.Parts, part{Type: "tool_call_response", ID: m.ToolCallID, Response: m.Content})
	case m.Content != "":
		out.Parts = append(out.Parts, part{Type: "text", Content: m.Content})
	}
	for _, c := range m.ToolCalls {
		args := c.Args
		if !json.Valid(args) {
			args = nil
		}
		out.Parts = append(out.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: args})
	}
	if out.Parts == nil {
		out.Parts = []part{}
	}
	return out
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "[]"
	}
	return string(b)
}
