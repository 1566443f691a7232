package provider

import "github.com/cairnhq/cairn"

// The estimate of a request's tokens, for a context budget when a
// provider's own count is not at hand: about BytesPerToken bytes of UTF-8
// text per token, plus a fixed cost for each message, tool and non-text
// part. It is deliberately simple and the same everywhere: the agent
// budgets with it, and the offline and script models report it as their
// usage.
const (
	BytesPerToken   = 4   // bytes of UTF-8 text per token
	MessageOverhead = 4   // tokens of a message's role and framing
	ToolOverhead    = 8   // tokens of a tool description's framing
	PartTokens      = 256 // tokens of a non-text part of a user message (an image, a file)
)

// EstimateMessageTokens estimates the tokens m costs in a request: its
// text, its tool calls' names, IDs and arguments, a tool message's name and
// call ID, MessageOverhead, and PartTokens for each non-text part.
func EstimateMessageTokens(m cairn.Message) int {
	n := len(m.Content) + len(m.Name) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Args)
	}
	return tokens(n) + MessageOverhead + PartTokens*len(m.Parts)
}

// EstimateTokens estimates the input tokens of req: its messages
// (EstimateMessageTokens) and its tools' names, descriptions and schemas.
func EstimateTokens(req *Request) int {
	n := 0
	for _, m := range req.Messages {
		n += EstimateMessageTokens(m)
	}
	return n + EstimateToolTokens(req.Tools)
}

// EstimateToolTokens estimates the tokens the descriptions of tools cost
// in a request.
func EstimateToolTokens(tools []Tool) int {
	n := 0
	for _, t := range tools {
		n += tokens(len(t.Name)+len(t.Description)+len(t.Schema)) + ToolOverhead
	}
	return n
}

// tokens is the tokens of n bytes of text, rounded up.
func tokens(n int) int { return (n + BytesPerToken - 1) / BytesPerToken }
