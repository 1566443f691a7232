package offline

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/internal/adapter"
)

// Model is the offline model. The zero value is ready to use.
type Model struct{}

var _ provider.Model = (*Model)(nil)

// New returns the offline model.
func New() *Model { return &Model{} }

// ID implements provider.Model: "offline".
func (*Model) ID() string { return "offline" }

// Generate implements provider.Model.
func (*Model) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("offline: %w", err)
	}
	resp := &provider.Response{Model: "offline", FinishReason: "stop"}
	msgs := req.Messages
	if req.Purpose == provider.PurposeSummary {
		resp.Text = provider.Digest(req)
		resp.Usage = adapter.EstimatedUsage(req, resp)
		return resp, nil
	}
	switch {
	case len(msgs) == 0:
		resp.Text = "I'm listening."
	case msgs[len(msgs)-1].Role == cairn.RoleTool:
		resp.Text = summarize(msgs)
	case msgs[len(msgs)-1].Role == cairn.RoleUser:
		if calls := toolCalls(msgs[len(msgs)-1].Content, req); len(calls) > 0 {
			resp.ToolCalls, resp.FinishReason = calls, "tool_calls"
		} else {
			resp.Text = reply(msgs, req.Variables)
		}
	default:
		resp.Text = "I'm listening."
	}
	if req.OnText != nil && resp.Text != "" {
		for _, w := range strings.SplitAfter(resp.Text, " ") {
			req.OnText(w)
		}
	}
	resp.Usage = adapter.EstimatedUsage(req, resp)
	return resp, nil
}

// reply answers a user message from the conversation so far: the turns
// a compaction's digest covers, and the user messages since.
func reply(msgs []cairn.Message, vars map[string]json.RawMessage) string {
	var said []string
	earlier := 0
	for _, m := range msgs {
		switch {
		case m.Role == cairn.RoleUser:
			said = append(said, m.Content)
		case m.IsSummary():
			earlier = provider.DigestTurns(m.Content)
		}
	}
	n := len(said)
	var b strings.Builder
	fmt.Fprintf(&b, "Turn %d. You said %q.", earlier+n, said[n-1])
	switch {
	case n > 1:
		fmt.Fprintf(&b, " Before that you told me %q.", said[n-2])
	case earlier > 0:
		b.WriteString(" What came before is summarized.")
	default:
		b.WriteString(" This is the start of our conversation.")
	}
	if len(vars) > 0 {
		keys := slices.Sorted(maps.Keys(vars))
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+"="+string(vars[k]))
		}
		fmt.Fprintf(&b, " I remember %s.", strings.Join(parts, ", "))
	}
	return b.String()
}

// toolCalls turns plain requests into calls of the tools the request offers.
func toolCalls(text string, req *provider.Request) []cairn.ToolCall {
	has := func(name string) bool {
		return slices.ContainsFunc(req.Tools, func(t provider.Tool) bool { return t.Name == name })
	}
	var calls []cairn.ToolCall
	for _, part := range strings.Split(text, ";") {
		name, args, ok := parse(strings.TrimSpace(part))
		if !ok || !has(name) {
			return nil // one part is not a request: answer in words
		}
		raw, _ := json.Marshal(args)
		calls = append(calls, cairn.ToolCall{ID: fmt.Sprintf("call_%d_%d", req.Responses, len(calls)), Name: name, Args: raw})
	}
	return calls
}

// parse recognises one plain request.
func parse(s string) (string, map[string]any, bool) {
	verb, rest, _ := strings.Cut(s, " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(verb) {
	case "calc", "calculate", "compute":
		if rest != "" {
			return "calc", map[string]any{"expression": rest}, true
		}
	case "remember":
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			k, v, ok = strings.Cut(rest, " is ")
		}
		if k, v = strings.TrimSpace(k), strings.TrimSpace(v); ok && k != "" {
			var value any = v
			if json.Valid([]byte(v)) {
				value = json.RawMessage(v)
			}
			return "remember", map[string]any{"key": k, "value": value}, true
		}
	case "recall":
		if rest != "" && !strings.Contains(rest, " ") {
			return "recall", map[string]any{"key": rest}, true
		}
	case "time", "clock":
		if rest == "" {
			return "clock", map[string]any{}, true
		}
	case "append":
		if i := strings.LastIndex(rest, " to "); i > 0 {
			return "append_file", map[string]any{"path": strings.TrimSpace(rest[i+4:]), "line": rest[:i]}, true
		}
	}
	return "", nil, false
}

// summarize answers the results of the tool calls of the last assistant message.
func summarize(msgs []cairn.Message) string {
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Role == cairn.RoleTool {
		i--
	}
	args := map[string]map[string]any{}
	if i >= 0 {
		for _, c := range msgs[i].ToolCalls {
			var a map[string]any
			_ = json.Unmarshal(c.Args, &a)
			args[c.ID] = a
		}
	}
	var out []string
	for _, m := range msgs[i+1:] {
		a := args[m.ToolCallID]
		switch {
		case m.IsError:
			out = append(out, fmt.Sprintf("%s failed: %s.", m.Name, m.Content))
		case m.Name == "calc":
			out = append(out, fmt.Sprintf("%v = %s.", a["expression"], m.Content))
		case m.Name == "remember":
			out = append(out, fmt.Sprintf("OK, I will remember %v.", a["key"]))
		case m.Name == "recall":
			out = append(out, fmt.Sprintf("%v is %s.", a["key"], m.Content))
		case m.Name == "clock":
			out = append(out, fmt.Sprintf("It is %s.", m.Content))
		default:
			out = append(out, fmt.Sprintf("%s: %s.", m.Name, m.Content))
		}
	}
	return strings.Join(out, " ")
}
