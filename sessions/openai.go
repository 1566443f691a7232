package sessions

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
)

// oaMessage is one Chat Completions message as exported.
type oaMessage struct {
	Role       string   `json:"role"`
	Name       string   `json:"name,omitempty"` // cairn.SummaryName on a compaction summary
	Content    any      `json:"content"`        // a string, a list of parts, or null
	ToolCalls  []oaCall `json:"tool_calls,omitempty"`
	ToolCallID string   `json:"tool_call_id,omitempty"`
}

// oaCall is a tool call in the Chat Completions form; checkpoint metadata
// uses it too.
type oaCall struct {
	ID       string     `json:"id"`
	Type     string     `json:"type"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // the arguments as JSON text
}

func toOACalls(calls []cairn.ToolCall) []oaCall {
	var out []oaCall
	for _, c := range calls {
		out = append(out, oaCall{ID: c.ID, Type: "function", Function: oaFunction{Name: c.Name, Arguments: argumentsText(c.Args)}})
	}
	return out
}

// argumentsText is a call's arguments as the JSON text a model sent.
func argumentsText(args json.RawMessage) string {
	if t := bytes.TrimSpace(args); len(t) > 0 {
		return string(t)
	}
	return "{}"
}

// openAIExport builds the message list of the folded state.
func openAIExport(st *cairn.State, rep *Report) ([]oaMessage, error) {
	out := []oaMessage{}
	errs, fileURLs, other := 0, 0, 0
	for _, m := range exportable(st, rep) {
		om := oaMessage{Role: m.Role, Content: m.Content}
		if m.IsSummary() {
			om.Name = cairn.SummaryName
		}
		switch m.Role {
		case cairn.RoleUser:
			if len(m.Parts) > 0 {
				parts, f, o := userParts(m)
				om.Content, fileURLs, other = parts, fileURLs+f, other+o
			}
		case cairn.RoleAssistant:
			om.ToolCalls = toOACalls(m.ToolCalls)
			if m.Content == "" && len(m.ToolCalls) > 0 {
				om.Content = nil
			}
		case cairn.RoleTool:
			om.ToolCallID = m.ToolCallID
			if m.IsError {
				errs++
			}
		}
		out = append(out, om)
	}
	rep.dropCount(len(st.Variables), "session variable", "session variables", "%s")
	if st.Agent != "" {
		rep.drop("the agent name (%s)", st.Agent)
	}
	rep.dropCount(errs, "tool result", "tool results", "the error flag of %s")
	rep.dropCount(fileURLs, "file part", "file parts", "%s given by URL (Chat Completions takes files inline only)")
	rep.dropCount(other, "message part", "message parts", "%s of a type Chat Completions lacks")
	return out, nil
}

// userParts converts a user message with non-text parts into content
// parts, counting file parts given by URL and parts of unknown types, which
// it leaves out.
func userParts(m cairn.Message) (parts []map[string]any, fileURLs, other int) {
	if m.Content != "" {
		parts = append(parts, map[string]any{"type": "text", "text": m.Content})
	}
	for _, p := range m.Parts {
		switch {
		case p.Type == "image" && len(p.Data) > 0:
			parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": dataURL(p.MIME, p.Data)}})
		case p.Type == "image" && p.URL != "":
			parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": p.URL}})
		case p.Type == "file" && len(p.Data) > 0:
			f := map[string]any{"file_data": dataURL(p.MIME, p.Data)}
			if p.Text != "" {
				f["filename"] = p.Text
			}
			parts = append(parts, map[string]any{"type": "file", "file": f})
		case p.Type == "file":
			fileURLs++
		default:
			other++
		}
	}
	if parts == nil {
		parts = []map[string]any{}
	}
	return parts, fileURLs, other
}

// exportable returns the messages of st that a provider accepts in order:
// a tool message whose call is no longer in the history (a compaction cut
// between a call and its result) is left out and reported.
func exportable(st *cairn.State, rep *Report) []cairn.Message {
	asked := map[string]bool{}
	var out []cairn.Message
	orphans := 0
	for _, m := range st.Messages {
		for _, c := range m.ToolCalls {
			asked[c.ID] = true
		}
		if m.Role == cairn.RoleTool {
			if !asked[m.ToolCallID] {
				orphans++
				continue
			}
			delete(asked, m.ToolCallID)
		}
		out = append(out, m)
	}
	rep.dropCount(orphans, "tool result", "tool results", "%s whose call is no longer in the history (compacted away)")
	return out
}

// parseOpenAI reads a bare message list or an object with "messages".
func parseOpenAI(data []byte, rep *Report) (*history, error) {
	top := value{raw: bytes.TrimSpace(data), off: skipSep(data, 0)}
	list := top
	switch {
	case top.is("an object"):
		o, err := asObject(top, "")
		if err != nil {
			return nil, err
		}
		v, ok := o.vals["messages"]
		if !ok {
			return nil, positioned("messages", top.off, "is missing")
		}
		list = v
		var others []string
		for _, k := range o.keys {
			if k != "messages" {
				others = append(others, k)
			}
		}
		if len(others) > 0 {
			rep.drop("the request fields %s", sentence(others))
		}
	case !top.is("an array"):
		return nil, positioned("", top.off, "must be a JSON array of messages or an object with \"messages\", not %s", kindOf(top.raw))
	}
	items, err := asArray(list, "messages")
	if err != nil {
		return nil, err
	}
	h := &history{}
	names, developer := 0, 0
	for i, v := range items {
		m, err := openAIMessage(i, v)
		if err != nil {
			return nil, err
		}
		if m.role == "developer" {
			m.role = cairn.RoleSystem
			developer++
		}
		if m.role != cairn.RoleTool && m.name != "" && !markSummary(&m, h.msgs) {
			names++
		}
		h.msgs = append(h.msgs, m)
	}
	if developer > 0 {
		rep.note("%s read as system messages", plural(developer, "developer message", "developer messages"))
	}
	rep.dropCount(names, "message", "messages", "the name of %s")
	return h, nil
}

var oaRoles = []string{"system", "developer", "user", "assistant", "tool"}

// openAIMessage reads message i.
func openAIMessage(i int, v value) (message, error) {
	fail := func(err *ImportError) (message, error) {
		err.Index = i
		return message{}, err
	}
	o, err := asObject(v, "")
	if err != nil {
		return fail(err)
	}
	if err := o.only("", "role", "content", "name", "tool_calls", "tool_call_id", "refusal"); err != nil {
		return fail(err)
	}
	m := message{index: i, off: v.off}
	if m.role, err = o.str("", "role", true); err != nil {
		return fail(err)
	}
	if m.name, err = o.str("", "name", false); err != nil {
		return fail(err)
	}
	switch m.role {
	case "system", "developer", "user", "assistant", "tool":
	case "function":
		return fail(positioned("role", o.vals["role"].off, "function messages are not supported (Chat Completions replaced them with tool messages)"))
	default:
		return fail(positioned("role", o.vals["role"].off, "unknown role %q (want %s)", m.role, sentence(oaRoles)))
	}
	if v, ok := o.vals["tool_calls"]; ok && m.role != cairn.RoleAssistant && !v.is("null") {
		return fail(positioned("tool_calls", v.off, "only assistant messages carry tool calls"))
	}
	if v, ok := o.vals["tool_call_id"]; ok && m.role != cairn.RoleTool && !v.is("null") {
		return fail(positioned("tool_call_id", v.off, "only tool messages answer a tool call"))
	}
	if v, ok := o.vals["refusal"]; ok && m.role != cairn.RoleAssistant && !v.is("null") {
		return fail(positioned("refusal", v.off, "only assistant messages carry a refusal"))
	}
	allowed := []string{"text"}
	switch m.role {
	case cairn.RoleUser:
		allowed = []string{"text", "image_url", "file"}
	case cairn.RoleAssistant:
		allowed = []string{"text", "refusal"}
	}
	text, parts, err := content(o, allowed)
	if err != nil {
		return fail(err)
	}
	m.text = text
	if m.role == cairn.RoleUser {
		m.parts = parts
	}
	switch m.role {
	case cairn.RoleAssistant:
		refusal, err := o.str("", "refusal", false)
		if err != nil {
			return fail(err)
		}
		if m.text == "" {
			m.text = refusal
		}
		if m.calls, err = toolCalls(o, "tool_calls", true); err != nil {
			return fail(err)
		}
	case cairn.RoleTool:
		if m.callID, err = o.str("", "tool_call_id", true); err != nil {
			return fail(err)
		}
		if m.callID == "" {
			return fail(positioned("tool_call_id", o.vals["tool_call_id"].off, "is empty"))
		}
	}
	return m, nil
}

// content reads a message's "content": a string, null, or a list of parts
// whose types are in allowed. It returns the text (text and refusal parts
// joined) and, when content is a list, its parts.
func content(o *object, allowed []string) (string, []cairn.Part, *ImportError) {
	v, ok := o.vals["content"]
	if !ok || v.is("null") {
		return "", nil, nil
	}
	if v.is("a string") {
		s, err := o.str("", "content", false)
		return s, nil, err
	}
	items, err := asArray(v, "content")
	if err != nil {
		return "", nil, positioned("content", v.off, "must be a string, a list of content parts or null, not %s", kindOf(v.raw))
	}
	text, parts := "", []cairn.Part{}
	for j, item := range items {
		p, err := contentPart(item, index("content", j), allowed)
		if err != nil {
			return "", nil, err
		}
		if p.Type == "text" {
			text += p.Text
		}
		parts = append(parts, p)
	}
	return text, parts, nil
}

// contentPart reads one content part; a refusal part comes back as text.
func contentPart(v value, field string, allowed []string) (cairn.Part, *ImportError) {
	o, err := asObject(v, field)
	if err != nil {
		return cairn.Part{}, err
	}
	typ, err := o.str(field, "type", true)
	if err != nil {
		return cairn.Part{}, err
	}
	if !slices.Contains(allowed, typ) {
		return cairn.Part{}, positioned(join(field, "type"), o.vals["type"].off, "content part type %q is not supported here (want %s)", typ, sentence(allowed))
	}
	switch typ {
	case "text", "refusal":
		if err := o.only(field, "type", typ); err != nil {
			return cairn.Part{}, err
		}
		s, err := o.str(field, typ, true)
		return cairn.Part{Type: "text", Text: s}, err
	case "image_url":
		if err := o.only(field, "type", "image_url"); err != nil {
			return cairn.Part{}, err
		}
		img, err := subObject(o, field, "image_url", "url", "detail")
		if err != nil {
			return cairn.Part{}, err
		}
		url, err := img.str(join(field, "image_url"), "url", true)
		if err != nil {
			return cairn.Part{}, err
		}
		if url == "" {
			return cairn.Part{}, positioned(join(field, "image_url.url"), img.vals["url"].off, "is empty")
		}
		p := cairn.Part{Type: "image", URL: url}
		if mime, data, ok := parseDataURL(url); ok {
			p = cairn.Part{Type: "image", MIME: mime, Data: data}
		}
		return p, nil
	default: // file
		if err := o.only(field, "type", "file"); err != nil {
			return cairn.Part{}, err
		}
		f, err := subObject(o, field, "file", "file_data", "filename")
		if err != nil {
			return cairn.Part{}, err
		}
		ff := join(field, "file")
		name, err := f.str(ff, "filename", false)
		if err != nil {
			return cairn.Part{}, err
		}
		fd, err := f.str(ff, "file_data", true)
		if err != nil {
			return cairn.Part{}, err
		}
		mime, data, ok := parseDataURL(fd)
		if !ok {
			return cairn.Part{}, positioned(join(ff, "file_data"), f.vals["file_data"].off, "must be a base64 data URL (data:MIME;base64,…)")
		}
		return cairn.Part{Type: "file", MIME: mime, Data: data, Text: name}, nil
	}
}

// subObject reads the object at key of o, allowing only the given keys.
func subObject(o *object, field, key string, allowed ...string) (*object, *ImportError) {
	v, ok := o.vals[key]
	if !ok {
		return nil, positioned(join(field, key), o.off, "is missing")
	}
	sub, err := asObject(v, join(field, key))
	if err != nil {
		return nil, err
	}
	return sub, sub.only(join(field, key), allowed...)
}

// toolCalls reads the tool calls at key of o, in the Chat Completions form
// {"id","type":"function","function":{"name","arguments"}}. With needID an
// empty or missing id is an error; without, the builder generates one.
func toolCalls(o *object, key string, needID bool) ([]call, *ImportError) {
	v, ok := o.vals[key]
	if !ok || v.is("null") {
		return nil, nil
	}
	items, err := asArray(v, key)
	if err != nil {
		return nil, err
	}
	var out []call
	for j, item := range items {
		field := index(key, j)
		c, err := toolCall(item, field, needID)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func toolCall(v value, field string, needID bool) (call, *ImportError) {
	o, err := asObject(v, field)
	if err != nil {
		return call{}, err
	}
	if err := o.only(field, "id", "type", "function", "index"); err != nil {
		return call{}, err
	}
	c := call{off: v.off}
	if c.id, err = o.str(field, "id", needID); err != nil {
		return call{}, err
	}
	if needID && c.id == "" {
		return call{}, positioned(join(field, "id"), o.vals["id"].off, "is empty")
	}
	typ, err := o.str(field, "type", false)
	if err != nil {
		return call{}, err
	}
	if typ != "" && typ != "function" {
		return call{}, positioned(join(field, "type"), o.vals["type"].off, "is %q; only function tool calls are supported", typ)
	}
	fn, err := subObject(o, field, "function", "name", "arguments")
	if err != nil {
		return call{}, err
	}
	ff := join(field, "function")
	if c.name, err = fn.str(ff, "name", true); err != nil {
		return call{}, err
	}
	if c.name == "" {
		return call{}, positioned(join(ff, "name"), fn.vals["name"].off, "is empty")
	}
	c.args, err = arguments(fn, ff)
	return c, err
}

// arguments reads a function's "arguments": JSON text in a string (the
// Chat Completions form) or, leniently, a JSON object. Empty text is {};
// text that is not JSON is kept as a JSON string, as the openai provider
// does with such arguments from a model.
func arguments(fn *object, field string) (json.RawMessage, *ImportError) {
	v, ok := fn.vals["arguments"]
	if !ok || v.is("null") {
		return json.RawMessage(`{}`), nil
	}
	if v.is("an object") {
		return compact(v.raw), nil
	}
	text, err := fn.str(field, "arguments", false)
	if err != nil {
		return nil, positioned(join(field, "arguments"), v.off, "must be a string of JSON text, not %s", kindOf(v.raw))
	}
	t := bytes.TrimSpace([]byte(text))
	switch {
	case len(t) == 0:
		return json.RawMessage(`{}`), nil
	case json.Valid(t):
		if err := checkStrict(t, ""); err != nil {
			return nil, positioned(join(field, "arguments"), v.off, "the arguments' JSON text: %s%s", fieldPrefix(err.Field), err.Msg)
		}
		return compact(t), nil
	}
	b, _ := json.Marshal(text) // a string always encodes
	return b, nil
}

// fieldPrefix is `field "f": ` for an error's field, "" for none.
func fieldPrefix(f string) string {
	if f == "" {
		return ""
	}
	return `field "` + f + `": `
}

func compact(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return json.RawMessage(raw)
	}
	return buf.Bytes()
}

// dataURL encodes inline data as a base64 data URL.
func dataURL(mime string, data []byte) string {
	if mime == "" {
		mime = "application/octet-stream"
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// parseDataURL decodes a base64 data URL; ok is false for anything else,
// which callers keep as a plain URL.
func parseDataURL(u string) (mime string, data []byte, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", nil, false
	}
	head, payload, found := strings.Cut(rest, ",")
	if !found {
		return "", nil, false
	}
	mime, found = strings.CutSuffix(head, ";base64")
	if !found {
		return "", nil, false
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil || len(data) == 0 {
		return "", nil, false
	}
	if mime == "" {
		mime = "application/octet-stream"
	}
	return mime, data, true
}
