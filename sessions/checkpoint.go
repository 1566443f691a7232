package sessions

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/cairnhq/cairn"
)

// cpDoc is the checkpoint document: the agent's profile, its step count,
// the time of the last change, its variables and its history.
type cpDoc struct {
	AgentProfile string                     `json:"agent_profile"`
	CurrentStep  int                        `json:"current_step"`
	UpdatedAt    *string                    `json:"updated_at"`
	Variables    map[string]json.RawMessage `json:"variables"`
	History      []cpMessage                `json:"history"`
}

// cpMessage is one history entry; what a role/content pair cannot say
// goes into metadata.
type cpMessage struct {
	Role     string  `json:"role"`
	Name     string  `json:"name,omitempty"`
	Content  string  `json:"content"`
	Metadata *cpMeta `json:"metadata,omitempty"`
}

type cpMeta struct {
	ToolCalls  []oaCall     `json:"tool_calls,omitempty"`   // an assistant message's calls
	ToolCallID string       `json:"tool_call_id,omitempty"` // the call a tool message answers
	IsError    bool         `json:"is_error,omitempty"`     // a tool message that reports an error
	Parts      []cairn.Part `json:"parts,omitempty"`        // a user message's non-text parts
}

// checkpointExport builds the checkpoint document of the folded state.
func checkpointExport(st *cairn.State, rep *Report) (*cpDoc, error) {
	doc := &cpDoc{AgentProfile: st.Agent, CurrentStep: st.Steps, Variables: st.Variables, History: []cpMessage{}}
	if doc.Variables == nil {
		doc.Variables = map[string]json.RawMessage{}
	}
	if !st.UpdatedAt.IsZero() {
		s := st.UpdatedAt.UTC().Format(time.RFC3339Nano)
		doc.UpdatedAt = &s
	}
	for _, m := range exportable(st, rep) {
		cm := cpMessage{Role: m.Role, Content: m.Content}
		meta := &cpMeta{ToolCalls: toOACalls(m.ToolCalls), Parts: m.Parts}
		if m.IsSummary() {
			cm.Name = cairn.SummaryName
		}
		if m.Role == cairn.RoleTool {
			cm.Name, meta.ToolCallID, meta.IsError = m.Name, m.ToolCallID, m.IsError
		}
		if meta.ToolCalls != nil || meta.ToolCallID != "" || meta.Parts != nil {
			cm.Metadata = meta
		}
		doc.History = append(doc.History, cm)
	}
	return doc, nil
}

var cpFields = []string{"agent_profile", "current_step", "updated_at", "variables", "history"}

// parseCheckpoint reads a checkpoint document.
func parseCheckpoint(data []byte, rep *Report) (*history, error) {
	top := value{raw: bytes.TrimSpace(data), off: skipSep(data, 0)}
	o, err := asObject(top, "")
	if err != nil {
		return nil, positioned("", top.off, "a checkpoint must be a JSON object with \"history\", not %s", kindOf(top.raw))
	}
	if err := o.only("", cpFields...); err != nil {
		return nil, err
	}
	h := &history{byName: true}
	if h.agent, err = o.str("", "agent_profile", false); err != nil {
		return nil, err
	}
	if err := checkpointStep(o, h); err != nil {
		return nil, err
	}
	if err := checkpointTime(o, h); err != nil {
		return nil, err
	}
	if err := checkpointVariables(o, h); err != nil {
		return nil, err
	}
	v, ok := o.vals["history"]
	if !ok {
		return nil, positioned("history", top.off, "is missing")
	}
	items, err := asArray(v, "history")
	if err != nil {
		return nil, err
	}
	names, ignored := 0, []string{}
	for i, item := range items {
		m, ign, err := checkpointMessage(i, item)
		if err != nil {
			err.Index = i
			return nil, err
		}
		if m.role != cairn.RoleTool && m.name != "" && !markSummary(&m, h.msgs) {
			names++
		}
		for _, k := range ign {
			if !slices.Contains(ignored, k) {
				ignored = append(ignored, k)
			}
		}
		h.msgs = append(h.msgs, m)
	}
	rep.dropCount(names, "message", "messages", "the name of %s")
	if len(ignored) > 0 {
		rep.drop("the metadata keys %s", sentence(ignored))
	}
	return h, nil
}

func checkpointStep(o *object, h *history) *ImportError {
	v, ok := o.vals["current_step"]
	if !ok || v.is("null") {
		return nil
	}
	if !v.is("a number") {
		return positioned("current_step", v.off, "must be a number, not %s", kindOf(v.raw))
	}
	n, err := strconv.ParseInt(string(v.raw), 10, 32)
	if err != nil || n < 0 {
		return positioned("current_step", v.off, "is %s, want a whole number from 0", v.raw)
	}
	h.steps, h.hasSteps = int(n), true
	return nil
}

func checkpointTime(o *object, h *history) *ImportError {
	s, err := o.str("", "updated_at", false)
	if err != nil || s == "" {
		return err
	}
	t, perr := time.Parse(time.RFC3339Nano, s)
	if perr != nil {
		return positioned("updated_at", o.vals["updated_at"].off, "is not an RFC 3339 time: %q", s)
	}
	if t = t.UTC(); t.IsZero() || t.Year() < 1 || t.Year() > 9999 {
		return positioned("updated_at", o.vals["updated_at"].off, "is out of range (years 0001 to 9999, not the zero time): %q", s)
	}
	h.at = t
	return nil
}

func checkpointVariables(o *object, h *history) *ImportError {
	v, ok := o.vals["variables"]
	if !ok || v.is("null") {
		return nil
	}
	vars, err := asObject(v, "variables")
	if err != nil {
		return err
	}
	h.vars, h.varOff = map[string]json.RawMessage{}, map[string]int64{}
	for _, k := range vars.keys {
		h.vars[k] = compact(vars.vals[k].raw)
		h.varOff[k] = vars.vals[k].off
	}
	return nil
}

var cpRoles = []string{cairn.RoleSystem, cairn.RoleUser, cairn.RoleAssistant, cairn.RoleTool}

// checkpointMessage reads history entry i; it returns the metadata keys it
// did not use.
func checkpointMessage(i int, v value) (message, []string, *ImportError) {
	o, err := asObject(v, "")
	if err != nil {
		return message{}, nil, err
	}
	if err := o.only("", "role", "content", "name", "metadata"); err != nil {
		return message{}, nil, err
	}
	m := message{index: i, off: v.off}
	if m.role, err = o.str("", "role", true); err != nil {
		return message{}, nil, err
	}
	if !slices.Contains(cpRoles, m.role) {
		return message{}, nil, positioned("role", o.vals["role"].off, "unknown role %q (want %s)", m.role, sentence(cpRoles))
	}
	if m.name, err = o.str("", "name", false); err != nil {
		return message{}, nil, err
	}
	if m.text, _, err = content(o, []string{"text"}); err != nil {
		return message{}, nil, err
	}
	mv, ok := o.vals["metadata"]
	if !ok || mv.is("null") {
		return m, nil, nil
	}
	meta, err := asObject(mv, "metadata")
	if err != nil {
		return message{}, nil, err
	}
	return checkpointMeta(m, meta)
}

// checkpointMeta reads the metadata keys that the message's role uses.
func checkpointMeta(m message, meta *object) (message, []string, *ImportError) {
	var used []string
	var err *ImportError
	switch m.role {
	case cairn.RoleAssistant:
		used = []string{"tool_calls"}
		m.calls, err = checkpointCalls(meta)
	case cairn.RoleTool:
		used = []string{"tool_call_id", "is_error"}
		if m.callID, err = meta.str("metadata", "tool_call_id", false); err == nil {
			m.isError, err = meta.boolean("metadata", "is_error")
		}
	case cairn.RoleUser:
		used = []string{"parts"}
		var extra []cairn.Part
		if extra, err = checkpointParts(meta); err == nil && extra != nil {
			m.parts = extra
			if m.text != "" {
				m.parts = append([]cairn.Part{{Type: "text", Text: m.text}}, extra...)
			}
			m.text = ""
			for _, p := range m.parts {
				if p.Type == "text" {
					m.text += p.Text
				}
			}
		}
	}
	if err != nil {
		return message{}, nil, err
	}
	var ignored []string
	for _, k := range meta.keys {
		if !slices.Contains(used, k) {
			ignored = append(ignored, k)
		}
	}
	return m, ignored, nil
}

// metaItems returns the items of the array metadata.key; none when it is
// absent or null.
func metaItems(meta *object, key string) ([]value, *ImportError) {
	v, ok := meta.vals[key]
	if !ok || v.is("null") {
		return nil, nil
	}
	return asArray(v, "metadata."+key)
}

// checkpointCalls reads metadata.tool_calls: each in the Chat Completions
// form, or the flatter {"id","name","args"} form; the id may be missing.
func checkpointCalls(meta *object) ([]call, *ImportError) {
	items, err := metaItems(meta, "tool_calls")
	if err != nil {
		return nil, err
	}
	var out []call
	for j, item := range items {
		field := index("metadata.tool_calls", j)
		o, err := asObject(item, field)
		if err != nil {
			return nil, err
		}
		if _, ok := o.vals["function"]; ok {
			c, err := toolCall(item, field, false)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
			continue
		}
		c, err := flatCall(o, field)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// flatCall reads {"id","name","args"}, where args is any JSON value, or
// {"id","name","arguments"} with arguments as JSON text.
func flatCall(o *object, field string) (call, *ImportError) {
	if err := o.only(field, "id", "type", "name", "args", "arguments"); err != nil {
		return call{}, err
	}
	c := call{off: o.off}
	var err *ImportError
	if c.id, err = o.str(field, "id", false); err != nil {
		return call{}, err
	}
	if c.name, err = o.str(field, "name", true); err != nil {
		return call{}, err
	}
	if c.name == "" {
		return call{}, positioned(join(field, "name"), o.vals["name"].off, "is empty")
	}
	if v, ok := o.vals["args"]; ok && !v.is("null") {
		c.args = compact(v.raw)
		return c, nil
	}
	c.args, err = arguments(o, field)
	return c, err
}

// checkpointParts reads metadata.parts: a user message's parts in cairn's
// own form {"type","text","mime","url","data"}.
func checkpointParts(meta *object) ([]cairn.Part, *ImportError) {
	items, err := metaItems(meta, "parts")
	if err != nil {
		return nil, err
	}
	out := []cairn.Part{}
	for j, item := range items {
		field := index("metadata.parts", j)
		o, err := asObject(item, field)
		if err != nil {
			return nil, err
		}
		if err := o.only(field, "type", "text", "mime", "url", "data"); err != nil {
			return nil, err
		}
		var p cairn.Part
		if p.Type, err = o.str(field, "type", true); err != nil {
			return nil, err
		}
		if p.Type == "" {
			return nil, positioned(join(field, "type"), o.vals["type"].off, "is empty")
		}
		if p.Text, err = o.str(field, "text", false); err != nil {
			return nil, err
		}
		if p.MIME, err = o.str(field, "mime", false); err != nil {
			return nil, err
		}
		if p.URL, err = o.str(field, "url", false); err != nil {
			return nil, err
		}
		if d, ok := o.vals["data"]; ok && !d.is("null") {
			if json.Unmarshal(d.raw, &p.Data) != nil {
				return nil, positioned(join(field, "data"), d.off, "must be a base64 string")
			}
		}
		out = append(out, p)
	}
	return out, nil
}
