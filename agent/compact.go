package agent

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
)

// Compaction strategies (Agent.Compaction): how older messages make room
// when a request would exceed the context budget.
const (
	// CompactSummarize replaces older messages by a summary that the model
	// writes (one call with provider.PurposeSummary), folding in the
	// earlier summary. The default. When the summary call fails, the
	// compaction falls back to CompactDrop (keeping the earlier summary's
	// text) and a *CompactionWarning is raised.
	CompactSummarize = "summarize"
	// CompactDrop replaces older messages by a note that says how many were
	// dropped, with no model call.
	CompactDrop = "drop"
	// CompactOff never compacts: requests grow with the session.
	CompactOff = "off"
)

// Context budgets by model, used when Agent.ContextTokens is 0.
const (
	// DefaultLocalContextTokens is the budget of the offline and script
	// models.
	DefaultLocalContextTokens = 8_192
	// DefaultUnknownContextTokens is the budget of a model not in the
	// table of DefaultContextTokens.
	DefaultUnknownContextTokens = 32_768
)

// contextWindows are the context windows of known models, by name prefix;
// the longest matching prefix wins.
var contextWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-5", 400_000},
	{"gpt-4.1", 1_047_576},
	{"gpt-4o", 128_000},
	{"gpt-4-turbo", 128_000},
	{"gpt-4-32k", 32_768},
	{"gpt-4", 8_192},
	{"gpt-3.5-turbo", 16_385},
	{"chatgpt-4o", 128_000},
	{"o1", 200_000},
	{"o1-mini", 128_000},
	{"o1-preview", 128_000},
	{"o3", 200_000},
	{"o4-mini", 200_000},
	{"claude-", 200_000},
}

// DefaultContextTokens returns the context budget for the model whose ID
// is modelID ("provider:name", as provider.Model.ID gives it): the context
// window of a known model (gpt-4o 128,000, gpt-4.1 1,047,576, gpt-5
// 400,000, o1/o3/o4-mini 200,000, claude-* 200,000, and others),
// DefaultLocalContextTokens for the offline and script models, and
// DefaultUnknownContextTokens for any other. A name given with a route,
// such as "openai/gpt-4o", is looked up by its last part.
func DefaultContextTokens(modelID string) int {
	p, name, ok := strings.Cut(modelID, ":")
	switch {
	case p == "offline" || p == "script":
		return DefaultLocalContextTokens
	case !ok:
		name = p
	}
	name = strings.ToLower(name[strings.LastIndex(name, "/")+1:])
	best, tokens := 0, DefaultUnknownContextTokens
	for _, w := range contextWindows {
		if strings.HasPrefix(name, w.prefix) && len(w.prefix) > best {
			best, tokens = len(w.prefix), w.tokens
		}
	}
	return tokens
}

func (a *Agent) contextTokens() int {
	if a.ContextTokens > 0 {
		return a.ContextTokens
	}
	if a.Model == nil {
		return DefaultUnknownContextTokens
	}
	return DefaultContextTokens(a.Model.ID())
}

func (a *Agent) compaction() string {
	if a.Compaction == "" {
		return CompactSummarize
	}
	return strings.ToLower(a.Compaction)
}

func (a *Agent) checkCompaction() error {
	if a.ContextTokens < 0 {
		return fmt.Errorf("agent ContextTokens is %d; want 0 (the model's default) or more", a.ContextTokens)
	}
	switch a.compaction() {
	case CompactSummarize, CompactDrop, CompactOff:
		return nil
	}
	return fmt.Errorf("agent Compaction is %q; want %q, %q or %q", a.Compaction, CompactSummarize, CompactDrop, CompactOff)
}

// CompactionWarning says that the model could not write the summary of a
// compaction: the older messages were dropped instead (CompactDrop, the
// earlier summary kept) and the run went on. It is logged and returned in
// Session.Warnings and Result.Warnings.
type CompactionWarning struct {
	Session string
	Err     error // why the summary call failed
}

// Error says that the summary failed and what was done instead.
func (w *CompactionWarning) Error() string {
	return fmt.Sprintf("session %s: the summary for a compaction failed, older messages were dropped without one: %v", w.Session, w.Err)
}

// Unwrap returns the summary call's error.
func (w *CompactionWarning) Unwrap() error { return w.Err }

// compact makes room before a model call: when the estimated request for
// st exceeds the context budget and compaction is not off, it records one
// memory.compacted (one append, so a crash leaves the session either as it
// was or compacted) and returns the state after it. The messages kept are
// the recent ones that fit in half the room the budget leaves beside the
// instructions, the tools and the summary (keepTokens). It never separates a
// tool call from its result nor compacts away a call without a result
// (see chooseCut); with no such cut it logs once per run and goes on.
func (r *runner) compact(ctx context.Context, st *cairn.State) (*cairn.State, *Result, error) {
	a := r.s.agent
	strategy := a.compaction()
	if strategy == CompactOff {
		return st, nil, nil
	}
	budget := a.contextTokens()
	tools := a.toolSpecs()
	est, scale := r.s.estimate(st, tools)
	if est <= budget {
		return st, nil, nil
	}
	sumTokens := summaryTokens(budget)
	c, ok := chooseCut(st.Messages, keepTokens(budget, scale, st.Messages, tools, sumTokens))
	if !ok {
		if !r.noCut {
			r.noCut = true
			a.logger().Warn("the request exceeds the context budget and no older messages can be compacted; it is sent as it is",
				"session", r.s.id, "estimate", est, "budget", budget)
		}
		return st, nil, nil
	}
	var summary string
	if strategy == CompactSummarize {
		var err error
		summary, err = r.summarize(ctx, st, c.compacted, sumTokens)
		switch {
		case err != nil && ctx.Err() != nil:
			res, ierr := r.interrupt(ctx)
			return st, res, ierr
		case err != nil:
			r.s.warn(&CompactionWarning{Session: r.s.id, Err: err})
		}
	}
	if summary == "" {
		summary = dropSummary(c.compacted)
	}
	e := cairn.MustEvent(cairn.KindMemoryCompacted, r.runID, cairn.MemoryCompacted{Summary: summary, UpTo: c.upTo})
	if err := r.s.append(ctx, e); err != nil {
		return st, &Result{Status: cairn.StatusFailed}, fmt.Errorf("run session %s: record compaction: %w", r.s.id, err)
	}
	a.logger().Debug("compacted the session's memory", "session", r.s.id, "strategy", strategy,
		"up_to", c.upTo, "messages", len(c.compacted), "estimate", est, "budget", budget)
	return r.s.State(), nil, nil
}

// summaryTokens is the size a summary may take in a budget: an eighth of
// it, from 64 to 4,096 tokens.
func summaryTokens(budget int) int { return min(max(budget/8, 64), 4096) }

// keepTokens is how many tokens of recent messages a compaction keeps, in
// the units of provider.EstimateMessageTokens: half of the room the budget
// leaves beside the instructions, the tools and the summary, scale being
// how many of the model's tokens one estimated token is. The summary is
// counted at its full size in estimated tokens, which errs on the safe
// side when scale is above 1.
func keepTokens(budget int, scale float64, msgs []cairn.Message, tools []provider.Tool, sumTokens int) int {
	fixed := provider.EstimateToolTokens(tools) + sumTokens
	for _, m := range msgs {
		if m.IsInstructions() {
			fixed += provider.EstimateMessageTokens(m)
		}
	}
	return max(int(float64(budget)/scale)-fixed, 0) / 2
}

// summarize asks the model for a summary of compacted (the earlier
// summary first, if any) in about sumTokens tokens: one call with
// provider.PurposeSummary. Its usage counts in the run's Result; it is not
// a model.response.
func (r *runner) summarize(ctx context.Context, st *cairn.State, compacted []cairn.Message, sumTokens int) (string, error) {
	req := &provider.Request{
		Purpose:       provider.PurposeSummary,
		Messages:      compacted,
		Responses:     st.Responses,
		SummaryTokens: sumTokens,
	}
	resp, err := r.s.agent.Model.Generate(ctx, req)
	if err != nil {
		return "", fmt.Errorf("model %s: %w", r.s.agent.Model.ID(), err)
	}
	r.usage = r.usage.Add(resp.Usage)
	if strings.TrimSpace(resp.Text) == "" {
		return "", fmt.Errorf("model %s: %w", r.s.agent.Model.ID(), errEmptySummary)
	}
	return strings.TrimSpace(resp.Text), nil
}

var errEmptySummary = errors.New("the summary is empty")

// dropNote is the note of CompactDrop, at the end of a summary.
var dropNote = regexp.MustCompile(`(?:^|\n\n)\[(\d+) earlier messages? (?:was|were) dropped to fit the context window\.\]$`)

// dropSummary is the summary of CompactDrop: the earlier summary's text,
// if any, and a note of how many messages were dropped in all, counting
// those of an earlier note.
func dropSummary(compacted []cairn.Message) string {
	prev, n := "", 0
	for _, m := range compacted {
		if m.IsSummary() {
			prev = m.Content
			continue
		}
		n++
	}
	if loc := dropNote.FindStringSubmatchIndex(prev); loc != nil {
		k, _ := strconv.Atoi(prev[loc[2]:loc[3]])
		n, prev = n+k, prev[:loc[0]]
	}
	note := fmt.Sprintf("[%d earlier messages were dropped to fit the context window.]", n)
	if n == 1 {
		note = "[1 earlier message was dropped to fit the context window.]"
	}
	if prev == "" {
		return note
	}
	return prev + "\n\n" + note
}

// estimate returns the estimated input tokens of the request a model call
// would send for st with tools, and how many times the character estimate
// of it that is (at least 1). It prefers the provider's count: the input
// and output tokens of the last model.response cover the messages up to
// it, if it came after the last compaction; the messages after it are
// estimated from their characters (provider.EstimateMessageTokens).
// Without such a count every message and the tools are estimated.
func (s *Session) estimate(st *cairn.State, tools []provider.Tool) (int, float64) {
	chars := provider.EstimateTokens(&provider.Request{Messages: st.Messages, Tools: tools})
	var since int64 // the last compaction's seq
	for _, m := range st.Messages {
		if m.IsSummary() {
			since = m.Seq
		}
	}
	for i := len(st.Messages) - 1; i >= 0; i-- {
		m := st.Messages[i]
		if m.Role != cairn.RoleAssistant {
			continue
		}
		u, ok := s.responseUsage(m.Seq)
		if m.Seq < since || !ok || u.InputTokens+u.OutputTokens <= 0 {
			break
		}
		est := int(u.InputTokens + u.OutputTokens)
		for _, after := range st.Messages[i+1:] {
			est += provider.EstimateMessageTokens(after)
		}
		return est, max(1, float64(est)/float64(max(chars, 1)))
	}
	return chars, 1
}

// responseUsage returns the usage recorded by the model.response at seq,
// if the memory holds that event.
func (s *Session) responseUsage(seq int64) (cairn.Usage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.mem.Len() - 1 - int(s.mem.LastSeq()-seq)
	if i < 0 || i >= s.mem.Len() {
		return cairn.Usage{}, false
	}
	e := s.mem.Event(i)
	if e.Seq != seq || e.Kind != cairn.KindModelResponse {
		return cairn.Usage{}, false
	}
	v, err := e.Decode()
	if err != nil {
		return cairn.Usage{}, false
	}
	d, ok := v.(*cairn.ModelResponse)
	if !ok {
		return cairn.Usage{}, false
	}
	return d.Usage, true
}

// cut is where a compaction cuts a session's messages.
type cut struct {
	keep      int             // the index of the first message kept
	upTo      int64           // the seq of the last message compacted
	compacted []cairn.Message // the earlier summary, if any, and the messages compacted, in order
}

// chooseCut chooses the messages to compact so that the recent ones kept
// take at most keep tokens (provider.EstimateMessageTokens): the messages
// before the cut are compacted, except the instructions, which a
// compaction keeps. A cut is valid only when every tool call asked for
// before it has its result before it (so a call is never separated from
// its result, and a call without a result, pending or awaiting approval,
// is never compacted), the first message kept is not a tool result, at
// least one message that is not an instruction is kept, and at least one
// message besides the instructions and the earlier summary is compacted
// (progress). Among valid cuts it prefers the earliest at a user message
// whose kept messages fit, then the earliest that fits, then the one that
// keeps the fewest tokens. It reports false when no cut is valid.
func chooseCut(msgs []cairn.Message, keep int) (cut, bool) {
	n := len(msgs)
	suffix := make([]int, n+1) // tokens of the messages kept from i on, instructions aside
	kept := make([]int, n+1)   // how many of them there are
	for i := n - 1; i >= 0; i-- {
		suffix[i], kept[i] = suffix[i+1], kept[i+1]
		if !msgs[i].IsInstructions() {
			suffix[i] += provider.EstimateMessageTokens(msgs[i])
			kept[i]++
		}
	}
	open := map[string]bool{} // calls asked for before the cut without a result before it
	progress := false
	last, fit, fitUser := -1, -1, -1
	for k := 1; k < n; k++ {
		m := msgs[k-1]
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
		if m.Role == cairn.RoleTool {
			delete(open, m.ToolCallID)
		}
		if m.Role != cairn.RoleSystem {
			progress = true
		}
		if !progress || len(open) > 0 || msgs[k].Role == cairn.RoleTool || kept[k] == 0 {
			continue
		}
		last = k
		if suffix[k] <= keep {
			if fit < 0 {
				fit = k
			}
			if fitUser < 0 && msgs[k].Role == cairn.RoleUser {
				fitUser = k
			}
		}
	}
	k := fitUser
	if k < 0 {
		k = fit
	}
	if k < 0 {
		k = last
	}
	if k < 0 {
		return cut{}, false
	}
	c := cut{keep: k, upTo: msgs[k-1].Seq}
	for _, m := range msgs[:k] {
		if !m.IsInstructions() {
			c.compacted = append(c.compacted, m)
		}
	}
	return c, true
}
