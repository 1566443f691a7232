package provider

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/text"
)

// Purposes of a Request.
const (
	// PurposeChat is a turn of the conversation: the model answers the
	// messages, and may call tools. The zero value.
	PurposeChat = ""
	// PurposeSummary asks for a summary that replaces older messages in a
	// long conversation (compaction). Messages hold the earlier summary
	// first, if there is one (a system message for which
	// cairn.Message.IsSummary reports true), then the messages to fold
	// into it; no tools are offered, and the answer's text is the new
	// summary. The call is not a step of the conversation: it is not
	// recorded as a model.response and does not advance a script.
	PurposeSummary = "summary"
)

// SummaryInstruction is the system prompt of a summary request as the
// openai and anthropic models send it (see SummaryPrompt).
const SummaryInstruction = `You compact a long conversation between a user and an AI assistant so that it fits the assistant's context window. Write a summary that will replace the messages given to you for the rest of the conversation: the assistant will see only your summary and the newer messages.

Keep every fact, name, number, date, decision, preference, commitment, open question and tool result that later turns may need, and the user's goals. If an earlier summary is given, fold it into the new one: keep everything it says unless the newer messages change it, so that nothing is lost from one compaction to the next. Write in the third person, in plain text, and answer with nothing but the summary.`

// SummaryPrompt returns the messages a chat model is sent for a
// PurposeSummary request: a system message with SummaryInstruction (and
// the length req.SummaryTokens allows), and a user message holding the
// earlier summary verbatim and a transcript of the messages to fold in.
// Models that serve summaries with an ordinary chat call use it.
func SummaryPrompt(req *Request) []cairn.Message {
	instr := SummaryInstruction
	if req.SummaryTokens > 0 {
		instr += fmt.Sprintf(" Use at most about %d words.", max(req.SummaryTokens*3/4, 20))
	}
	var b strings.Builder
	msgs := req.Messages
	if len(msgs) > 0 && msgs[0].IsSummary() {
		fmt.Fprintf(&b, "<earlier_summary>\n%s\n</earlier_summary>\n\n", msgs[0].Content)
		msgs = msgs[1:]
	}
	b.WriteString("<messages>\n")
	for _, m := range msgs {
		writeTranscript(&b, m)
	}
	b.WriteString("</messages>\n\nWrite the summary now.")
	return []cairn.Message{
		{Role: cairn.RoleSystem, Content: instr},
		{Role: cairn.RoleUser, Content: b.String()},
	}
}

// writeTranscript writes one message as transcript lines.
func writeTranscript(b *strings.Builder, m cairn.Message) {
	switch m.Role {
	case cairn.RoleTool:
		status := "result"
		if m.IsError {
			status = "error"
		}
		fmt.Fprintf(b, "[tool %s %s, call %s]: %s\n", m.Name, status, m.ToolCallID, m.Content)
		return
	case cairn.RoleUser:
		fmt.Fprintf(b, "[user]: %s\n", m.Content)
		if len(m.Parts) > 0 {
			fmt.Fprintf(b, "[user attached %d non-text part(s)]\n", len(m.Parts))
		}
	default:
		if m.Content != "" || len(m.ToolCalls) == 0 {
			fmt.Fprintf(b, "[%s]: %s\n", m.Role, m.Content)
		}
	}
	for _, c := range m.ToolCalls {
		fmt.Fprintf(b, "[assistant calls %s, call %s]: %s\n", c.Name, c.ID, c.Args)
	}
}

// SummaryPreamble introduces a compaction summary to a chat model, before
// the summary's text (see SystemText).
const SummaryPreamble = "The earlier part of this conversation was compacted to fit the context window. Summary of it:\n\n"

// SystemText is the text a chat model is sent for the system message m:
// a compaction summary gets SummaryPreamble before it; instructions are
// sent as they are.
func SystemText(m cairn.Message) string {
	if m.IsSummary() {
		return SummaryPreamble + m.Content
	}
	return m.Content
}

// Bounds of a Digest, in bytes.
const (
	digestQuote   = 120  // each quoted user message
	digestTools   = 200  // the list of tools
	digestEarlier = 300  // an earlier summary that is not a digest
	digestMax     = 1000 // the whole digest
)

// Digest returns a deterministic summary of a PurposeSummary request, for
// models that do not write one (offline, script): how many messages and
// user turns it covers, the first and last user messages and the tools
// used, folded with an earlier digest, in at most 1,000 bytes (fewer when
// req.SummaryTokens asks). For example:
//
//	Summary of 24 earlier messages (turns 1-12).
//	First user message: "I am Ada"
//	Last user message: "calc 2*21"
//	Tools used: calc, remember
//
// An earlier summary that is not a digest is kept, shortened, on an
// "Earlier:" line.
func Digest(req *Request) string {
	d := parseDigest("")
	msgs := req.Messages
	if len(msgs) > 0 && msgs[0].IsSummary() {
		d = parseDigest(msgs[0].Content)
		msgs = msgs[1:]
	}
	for _, m := range msgs {
		d.messages++
		if m.Role == cairn.RoleUser {
			d.turns++
			if d.first == "" {
				d.first = m.Content
			}
			d.last = m.Content
		}
		for _, c := range m.ToolCalls {
			if !slices.Contains(d.tools, c.Name) {
				d.tools = append(d.tools, c.Name)
			}
		}
	}
	return text.Truncate(d.String(), digestLimit(req.SummaryTokens))
}

func digestLimit(summaryTokens int) int {
	if summaryTokens > 0 {
		return min(digestMax, summaryTokens*BytesPerToken)
	}
	return digestMax
}

// DigestTurns returns how many user turns the Digest summary covers, and 0
// for a summary that is not a digest.
func DigestTurns(summary string) int {
	if !digestHead.MatchString(summary) {
		return 0
	}
	return parseDigest(summary).turns
}

type digest struct {
	messages, turns int
	first, last     string
	tools           []string
	earlier         string // an earlier summary that is not a digest
}

var (
	digestHead    = regexp.MustCompile(`^Summary of (\d+) earlier messages? \((?:turns 1-(\d+)|no turns)\)\.`)
	digestFirst   = regexp.MustCompile(`(?m)^First user message: (".*")$`)
	digestLast    = regexp.MustCompile(`(?m)^Last user message: (".*")$`)
	digestToolsRe = regexp.MustCompile(`(?m)^Tools used: (.*)$`)
	digestEarlyRe = regexp.MustCompile(`(?m)^Earlier: (".*")$`)
)

// parseDigest reads a digest back; any other summary becomes its earlier
// text.
func parseDigest(s string) digest {
	var d digest
	h := digestHead.FindStringSubmatch(s)
	if h == nil {
		d.earlier = strings.TrimSpace(s)
		return d
	}
	d.messages, _ = strconv.Atoi(h[1])
	d.turns, _ = strconv.Atoi(h[2])
	unquote := func(re *regexp.Regexp) string {
		if m := re.FindStringSubmatch(s); m != nil {
			u, _ := strconv.Unquote(m[1])
			return u
		}
		return ""
	}
	d.first, d.last, d.earlier = unquote(digestFirst), unquote(digestLast), unquote(digestEarlyRe)
	if m := digestToolsRe.FindStringSubmatch(s); m != nil {
		for t := range strings.SplitSeq(strings.TrimSuffix(m[1], ", …"), ", ") {
			if t != "" {
				d.tools = append(d.tools, t)
			}
		}
	}
	return d
}

func (d digest) String() string {
	var b strings.Builder
	turns := "no turns"
	if d.turns > 0 {
		turns = fmt.Sprintf("turns 1-%d", d.turns)
	}
	noun := "messages"
	if d.messages == 1 {
		noun = "message"
	}
	fmt.Fprintf(&b, "Summary of %d earlier %s (%s).", d.messages, noun, turns)
	quote := func(s string) string { return strconv.Quote(text.Truncate(s, digestQuote)) }
	if d.earlier != "" {
		fmt.Fprintf(&b, "\nEarlier: %s", strconv.Quote(text.Truncate(d.earlier, digestEarlier)))
	}
	if d.first != "" {
		fmt.Fprintf(&b, "\nFirst user message: %s", quote(d.first))
	}
	if d.last != "" {
		fmt.Fprintf(&b, "\nLast user message: %s", quote(d.last))
	}
	if len(d.tools) > 0 {
		tools := slices.Sorted(slices.Values(d.tools))
		list := strings.Join(tools, ", ")
		if len(list) > digestTools {
			list = text.Truncate(list, digestTools)
			if i := strings.LastIndex(list, ", "); i > 0 {
				list = list[:i]
			}
			list += ", …"
		}
		fmt.Fprintf(&b, "\nTools used: %s", list)
	}
	return b.String()
}
