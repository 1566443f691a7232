package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/internal/adapter"
)

// params builds the request body of one call. A summary request is an
// ordinary call of provider.SummaryPrompt, without tools.
func (m *Model) params(req *provider.Request) (sdk.MessageNewParams, error) {
	in, offered := adapter.ChatInput(req)
	system, msgs, err := messages(in)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	tools, err := tools(offered)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	return sdk.MessageNewParams{
		Model:     m.name,
		MaxTokens: m.tokens,
		System:    system,
		Messages:  msgs,
		Tools:     tools,
	}, nil
}

// messages converts the conversation. The Messages API has no system role:
// every system message becomes a block of the top-level system prompt, in
// order (a compaction's summary introduced as one: provider.SystemText).
// Tool results go back as tool_result blocks of a user message, and
// consecutive results share one user message, as the API requires; any
// other consecutive messages of one role are merged too. The API refuses a
// conversation that starts with the assistant, as one does after a
// compaction that cut in the middle of a run of tool calls: a user message
// that says so (continued) is put first.
func messages(in []cairn.Message) ([]sdk.TextBlockParam, []sdk.MessageParam, error) {
	var (
		system []sdk.TextBlockParam
		out    []sdk.MessageParam
	)
	// appendBlocks adds blocks to the last message when it has the same
	// role and merge allows, and starts a new message otherwise.
	appendBlocks := func(role string, merge bool, blocks ...sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && merge {
			last := &out[n-1]
			switch {
			case role == cairn.RoleUser && last.OfUser != nil:
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
				return
			case role == cairn.RoleAssistant && last.OfAssistant != nil:
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
				return
			}
		}
		if role == cairn.RoleUser {
			out = append(out, sdk.NewUserMessage(blocks...))
		} else {
			out = append(out, sdk.NewAssistantMessage(blocks...))
		}
	}
	for i, m := range in {
		switch m.Role {
		case cairn.RoleSystem:
			if m.Content != "" {
				system = append(system, sdk.TextBlockParam{Text: provider.SystemText(m)})
			}
		case cairn.RoleUser:
			blocks, err := userBlocks(m)
			if err != nil {
				return nil, nil, fmt.Errorf("message %d (seq %d): %w", i, m.Seq, err)
			}
			appendBlocks(cairn.RoleUser, true, blocks...)
		case cairn.RoleAssistant:
			appendBlocks(cairn.RoleAssistant, true, assistantBlocks(m)...)
		case cairn.RoleTool:
			// tool_result blocks must lead their user message: join only a
			// message that holds nothing but tool results.
			appendBlocks(cairn.RoleUser, onlyToolResults(out), toolResult(m))
		default:
			return nil, nil, fmt.Errorf("message %d (seq %d): unknown role %q", i, m.Seq, m.Role)
		}
	}
	if len(out) > 0 && out[0].OfAssistant != nil {
		text := continued
		if slices.ContainsFunc(in, cairn.Message.IsSummary) {
			text = continuedSummary
		}
		out = append([]sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock(text))}, out...)
	}
	return system, out, nil
}

// The user message put before a conversation that starts with the
// assistant.
const (
	continued        = "(The conversation continues.)"
	continuedSummary = "(The conversation continues from the summary above.)"
)

func onlyToolResults(out []sdk.MessageParam) bool {
	if len(out) == 0 || out[len(out)-1].OfUser == nil {
		return false
	}
	for _, b := range out[len(out)-1].OfUser.Content {
		if b.OfToolResult == nil {
			return false
		}
	}
	return true
}

// userBlocks converts a user message; empty text is left out, since the API
// refuses empty text blocks.
func userBlocks(m cairn.Message) ([]sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	if m.Content != "" {
		blocks = append(blocks, sdk.NewTextBlock(m.Content))
	}
	for _, p := range m.Parts {
		b, err := partBlock(p)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// partBlock converts an image or file part of a user message.
func partBlock(p cairn.Part) (sdk.ContentBlockParamUnion, error) {
	switch {
	case p.Type == "text":
		return sdk.NewTextBlock(p.Text), nil
	case p.Type == "image" && len(p.Data) > 0:
		return sdk.NewImageBlockBase64(p.MIME, base64.StdEncoding.EncodeToString(p.Data)), nil
	case p.Type == "image" && p.URL != "":
		return sdk.NewImageBlock(sdk.URLImageSourceParam{URL: p.URL}), nil
	case p.Type == "file" && p.MIME == "application/pdf" && len(p.Data) > 0:
		return sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(p.Data)}), nil
	case p.Type == "file" && p.MIME == "application/pdf" && p.URL != "":
		return sdk.NewDocumentBlock(sdk.URLPDFSourceParam{URL: p.URL}), nil
	case p.Type == "file" && strings.HasPrefix(p.MIME, "text/") && len(p.Data) > 0:
		return sdk.NewDocumentBlock(sdk.PlainTextSourceParam{Data: string(p.Data)}), nil
	case p.Type == "image":
		return sdk.ContentBlockParamUnion{}, errors.New("image part has neither data nor URL")
	default:
		return sdk.ContentBlockParamUnion{}, fmt.Errorf("part type %q (%s) is not supported", p.Type, p.MIME)
	}
}

func assistantBlocks(m cairn.Message) []sdk.ContentBlockParamUnion {
	var blocks []sdk.ContentBlockParamUnion
	if m.Content != "" {
		blocks = append(blocks, sdk.NewTextBlock(m.Content))
	}
	for _, c := range m.ToolCalls {
		blocks = append(blocks, sdk.NewToolUseBlock(toolID(c.ID), inputObject(c.Args), c.Name))
	}
	return blocks
}

func toolResult(m cairn.Message) sdk.ContentBlockParamUnion {
	r := sdk.ToolResultBlockParam{ToolUseID: toolID(m.ToolCallID)}
	if m.Content != "" {
		r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Content}}}
	}
	if m.IsError {
		r.IsError = param.NewOpt(true)
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &r}
}

// inputObject is a recorded tool call's arguments as a tool_use input,
// which must be a JSON object: arguments a model sent malformed (kept as a
// JSON string, see adapter.Arguments) go back as an empty object.
func inputObject(args json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(t)
}

// toolID makes a call ID acceptable to the API (letters, digits, _ and -),
// the same way for a tool_use and its tool_result, so that histories
// recorded with other models can be sent.
func toolID(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, id)
}

// tools converts the tool descriptions, passing each JSON Schema through as
// the input schema.
func tools(in []provider.Tool) ([]sdk.ToolUnionParam, error) {
	out := make([]sdk.ToolUnionParam, 0, len(in))
	for _, t := range in {
		schema, err := inputSchema(t.Schema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		tool := sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tool.Description = param.NewOpt(t.Description)
		}
		out = append(out, sdk.ToolUnionParam{OfTool: &tool})
	}
	return out, nil
}

// inputSchema splits a JSON Schema object into the SDK's fields: properties,
// required, and every other keyword as an extra field. An empty schema
// stands for a tool without arguments. (Numbers decode as float64: the
// SDK's encoder would write a json.Number as a string.)
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	if len(bytes.TrimSpace(raw)) == 0 {
		s.Properties = map[string]any{}
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return s, fmt.Errorf("schema is not a JSON object: %s", raw)
	}
	if typ, ok := m["type"]; ok && typ != "object" {
		return s, fmt.Errorf("schema type is %v; a tool's input schema must be of type object", typ)
	}
	s.Properties = m["properties"]
	if req, ok := m["required"]; ok {
		list, ok := req.([]any)
		if !ok {
			return s, fmt.Errorf("schema required is %v, not a list of names", req)
		}
		for _, r := range list {
			name, ok := r.(string)
			if !ok {
				return s, fmt.Errorf("schema required holds %v, not a name", r)
			}
			s.Required = append(s.Required, name)
		}
	}
	for k, v := range m {
		switch k {
		case "type", "properties", "required":
			continue
		}
		if s.ExtraFields == nil {
			s.ExtraFields = map[string]any{}
		}
		s.ExtraFields[k] = v
	}
	return s, nil
}
