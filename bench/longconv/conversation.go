package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/provider"
)

// The conversation both sides run, byte for byte: bench/langgraph's
// conversation.js makes the same texts.
//
// Turn n (from 1): a 1 KB user message; the model answers 1 KB. Every third
// turn the model first asks for one call of the tool "lookup" with
// {"turn": n}, whose result is 1 KB, and then answers.
const (
	size         = 1024 // bytes of every user message, answer and tool result
	instructions = "You are the assistant of a long benchmark conversation."
	toolName     = "lookup"
	threadID     = "long-conversation"
)

// words: the texts read as word salad, so that a compressor (PostgreSQL
// compresses values over 2 KB) finds what it would in prose, no more.
var words = [...]string{
	"the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on",
	"not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were",
	"their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would", "who", "so",
	"model", "agent", "memory", "store", "session", "event", "tool", "answer", "question", "turn", "state", "thread", "write", "read", "long", "short",
}

// words has 64 entries: text takes an index from 6 bits.
var (
	_ [len(words) - 64]struct{}
	_ [64 - len(words)]struct{}
)

var kinds = map[string]uint32{"user": 0, "answer": 1, "result": 2}

// text returns the size-byte text of a kind ("user", "answer" or "result")
// for turn n: "user 000042:" and words drawn by a 32-bit linear
// congruential generator seeded with n*4 + the kind's index.
func text(kind string, n int) string {
	x := uint32(n)*4 + kinds[kind]
	var b strings.Builder
	b.Grow(size + 16)
	fmt.Fprintf(&b, "%s %06d:", kind, n)
	for b.Len() < size {
		x = x*1664525 + 1013904223
		b.WriteByte(' ')
		b.WriteString(words[x>>26])
	}
	return b.String()[:size]
}

var turnRE = regexp.MustCompile(`^[a-z]+ (\d{6}):`)

// turnOf reads n back from a text made by text.
func turnOf(t string) (int, error) {
	m := turnRE.FindStringSubmatch(t)
	if m == nil {
		return 0, fmt.Errorf("not a text of the conversation: %.40q", t)
	}
	return strconv.Atoi(m[1])
}

// callID is the ID of turn n's tool call.
func callID(n int) string { return fmt.Sprintf("call_%06d", n) }

// messagesAfter returns how many messages a thread holds after n turns, the
// system message included: a user message and an answer per turn, and the
// tool call and its result every third turn.
func messagesAfter(n int) int { return 1 + 2*n + 2*(n/3) }

// model is the fake model: it answers the last message. A user message of
// turn n gets the answer of turn n, or, every third turn, a call of the
// tool; a tool result gets the answer of its turn.
type model struct{}

func (model) ID() string { return "fake:long-conversation" }

func (model) Generate(_ context.Context, req *provider.Request) (*provider.Response, error) {
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("fake model: no messages")
	}
	last := req.Messages[len(req.Messages)-1]
	n, err := turnOf(last.Content)
	if err != nil {
		return nil, fmt.Errorf("fake model: %w", err)
	}
	if last.Role == cairn.RoleUser && n%3 == 0 {
		args := json.RawMessage(fmt.Sprintf(`{"turn":%d}`, n))
		return &provider.Response{ToolCalls: []cairn.ToolCall{{ID: callID(n), Name: toolName, Args: args}},
			FinishReason: "tool_calls", Model: "fake"}, nil
	}
	return &provider.Response{Text: text("answer", n), FinishReason: "stop", Model: "fake"}, nil
}

type lookupArgs struct {
	Turn int `json:"turn"`
}

func lookup() *agent.Tool {
	return agent.NewTool(toolName, "Looks up what the conversation needs at a turn.",
		func(_ context.Context, in lookupArgs) (string, error) { return text("result", in.Turn), nil })
}
