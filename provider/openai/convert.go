package openai

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/internal/adapter"
)

// params builds the request body of one call. A summary request is an
// ordinary chat call of provider.SummaryPrompt, without tools.
func (m *Model) params(req *provider.Request) (sdk.ChatCompletionNewParams, error) {
	in, offered := adapter.ChatInput(req)
	msgs, err := messages(in)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	tools, err := tools(offered)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	p := sdk.ChatCompletionNewParams{
		Model:         m.name,
		Messages:      msgs,
		Tools:         tools,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	if m.tokens > 0 {
		p.MaxCompletionTokens = param.NewOpt(m.tokens)
	}
	return p, nil
}

// messages converts the conversation, keeping every message in its place:
// system messages stay system messages wherever they stand; a compaction's
// summary is introduced as one (provider.SystemText).
func messages(in []cairn.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	out := make([]sdk.ChatCompletionMessageParamUnion, 0, len(in))
	for i, m := range in {
		switch m.Role {
		case cairn.RoleSystem:
			out = append(out, sdk.SystemMessage(provider.SystemText(m)))
		case cairn.RoleUser:
			u, err := userMessage(m)
			if err != nil {
				return nil, fmt.Errorf("message %d (seq %d): %w", i, m.Seq, err)
			}
			out = append(out, u)
		case cairn.RoleAssistant:
			out = append(out, assistantMessage(m))
		case cairn.RoleTool:
			out = append(out, sdk.ToolMessage(toolOutput(m), m.ToolCallID))
		default:
			return nil, fmt.Errorf("message %d (seq %d): unknown role %q", i, m.Seq, m.Role)
		}
	}
	return out, nil
}

func userMessage(m cairn.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	if len(m.Parts) == 0 {
		return sdk.UserMessage(m.Content), nil
	}
	var parts []sdk.ChatCompletionContentPartUnionParam
	if m.Content != "" {
		parts = append(parts, sdk.TextContentPart(m.Content))
	}
	for _, p := range m.Parts {
		part, err := contentPart(p)
		if err != nil {
			return sdk.ChatCompletionMessageParamUnion{}, err
		}
		parts = append(parts, part)
	}
	return sdk.UserMessage(parts), nil
}

// contentPart converts an image or file part of a user message.
func contentPart(p cairn.Part) (sdk.ChatCompletionContentPartUnionParam, error) {
	switch p.Type {
	case "text":
		return sdk.TextContentPart(p.Text), nil
	case "image":
		u := p.URL
		if len(p.Data) > 0 {
			u = dataURL(p.MIME, p.Data)
		}
		if u == "" {
			return sdk.ChatCompletionContentPartUnionParam{}, errors.New("image part has neither data nor URL")
		}
		return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: u}), nil
	case "file":
		if len(p.Data) == 0 {
			return sdk.ChatCompletionContentPartUnionParam{}, errors.New("file part has no data (Chat Completions takes files inline only)")
		}
		f := sdk.ChatCompletionContentPartFileFileParam{FileData: param.NewOpt(dataURL(p.MIME, p.Data))}
		if p.Text != "" {
			f.Filename = param.NewOpt(p.Text)
		}
		return sdk.FileContentPart(f), nil
	default:
		return sdk.ChatCompletionContentPartUnionParam{}, fmt.Errorf("part type %q is not supported", p.Type)
	}
}

func dataURL(mime string, data []byte) string {
	if mime == "" {
		mime = "application/octet-stream"
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

func assistantMessage(m cairn.Message) sdk.ChatCompletionMessageParamUnion {
	var a sdk.ChatCompletionAssistantMessageParam
	if m.Content != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = param.NewOpt(m.Content)
	}
	for _, c := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID: c.ID,
				Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      c.Name,
					Arguments: argumentsText(c.Args),
				},
			},
		})
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// toolOutput is a tool message's content. Chat Completions has no error
// flag, so an error result that does not say so itself is prefixed "error: ".
func toolOutput(m cairn.Message) string {
	if m.IsError && !strings.HasPrefix(strings.ToLower(m.Content), "error") {
		return "error: " + m.Content
	}
	return m.Content
}

// tools converts the tool descriptions; each schema is passed through as
// the function's parameters.
func tools(in []provider.Tool) ([]sdk.ChatCompletionToolUnionParam, error) {
	out := make([]sdk.ChatCompletionToolUnionParam, 0, len(in))
	for _, t := range in {
		schema, err := schemaObject(t.Schema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			def.Description = param.NewOpt(t.Description)
		}
		out = append(out, sdk.ChatCompletionFunctionTool(def))
	}
	return out, nil
}

// schemaObject decodes a JSON Schema object. An empty schema stands for a
// tool without arguments. (Numbers decode as float64: the SDK's encoder
// would write a json.Number as a string.)
func schemaObject(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil || schema == nil {
		return nil, fmt.Errorf("schema is not a JSON object: %s", raw)
	}
	return schema, nil
}

// response reads the accumulated stream.
func response(cc *sdk.ChatCompletion) (*provider.Response, error) {
	if len(cc.Choices) == 0 {
		return nil, errors.New("stream: the response has no choices")
	}
	choice := cc.Choices[0]
	if choice.FinishReason == "" {
		return nil, errors.New("stream: the response ended without a finish reason (truncated)")
	}
	resp := &provider.Response{
		Text:         cmp.Or(choice.Message.Content, choice.Message.Refusal),
		FinishReason: choice.FinishReason,
		Model:        cc.Model,
		Usage:        cairn.Usage{InputTokens: cc.Usage.PromptTokens, OutputTokens: cc.Usage.CompletionTokens},
	}
	for _, c := range choice.Message.ToolCalls {
		id := c.ID
		if id == "" {
			id = adapter.NewCallID("call_")
		}
		resp.ToolCalls = append(resp.ToolCalls, cairn.ToolCall{ID: id, Name: c.Function.Name, Args: adapter.Arguments(c.Function.Arguments)})
	}
	// Some OpenAI-compatible servers end a turn that calls tools with "stop".
	if len(resp.ToolCalls) > 0 && resp.FinishReason == "stop" {
		resp.FinishReason = "tool_calls"
	}
	return resp, nil
}

// argumentsText is the inverse of adapter.Arguments: the text to send back to the
// model for a recorded tool call.
func argumentsText(args json.RawMessage) string {
	t := bytes.TrimSpace(args)
	if len(t) == 0 {
		return "{}"
	}
	if t[0] == '"' {
		var s string
		if json.Unmarshal(t, &s) == nil {
			return s
		}
	}
	return string(t)
}
