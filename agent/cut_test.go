package agent

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
)

// conv builds messages numbered from seq 1 from a compact notation: "s"
// instructions, "S" a summary, "u" a user message, "a" an answer, "a:x,y"
// an answer that calls x and y, "t:x" the result of call x. Each message's
// text is padded to about size bytes.
func conv(size int, spec ...string) []cairn.Message {
	var out []cairn.Message
	pad := strings.Repeat("x", size)
	for i, s := range spec {
		m := cairn.Message{Seq: int64(i + 1), Content: pad}
		kind, arg, _ := strings.Cut(s, ":")
		switch kind {
		case "s":
			m.Role = cairn.RoleSystem
		case "S":
			m.Role, m.Name = cairn.RoleSystem, cairn.SummaryName
		case "u":
			m.Role = cairn.RoleUser
		case "a":
			m.Role = cairn.RoleAssistant
			for id := range strings.SplitSeq(arg, ",") {
				if id != "" {
					m.ToolCalls = append(m.ToolCalls, cairn.ToolCall{ID: id, Name: "calc", Args: json.RawMessage(`{}`)})
				}
			}
		case "t":
			m.Role, m.ToolCallID, m.Name = cairn.RoleTool, arg, "calc"
		default:
			panic("conv: " + s)
		}
		out = append(out, m)
	}
	return out
}

func TestChooseCut(t *testing.T) {
	tests := []struct {
		name string
		spec []string
		keep int // in messages of the same size: keep*per tokens
		want int // the index of the first message kept; -1: no cut
	}{
		{"turns: the earliest user message that fits", []string{"s", "u", "a", "u", "a", "u", "a", "u"}, 3, 5},
		{"a user boundary over an earlier fit", []string{"s", "u", "a:c1", "t:c1", "a:c2", "t:c2", "a", "u", "a"}, 5, 7},
		{"no user boundary fits: the earliest valid fit", []string{"s", "u", "a:c1", "t:c1", "a:c2", "t:c2", "a:c3", "t:c3", "a"}, 4, 6},
		{"a pair is never split", []string{"s", "u", "a:c1,c2", "t:c1", "t:c2", "a"}, 2, 5},
		{"a pending call is never compacted", []string{"s", "u", "a", "u", "a:c1"}, 0, 4},
		{"a call without a result keeps everything from it on", []string{"s", "u", "a:c1", "u", "a", "u"}, 1, 2},
		{"a call without a result first: no cut", []string{"s", "a:c1", "u"}, 0, -1},
		{"nothing fits: keep the fewest", []string{"s", "u", "a", "u"}, 0, 3},
		{"the earlier summary alone is no progress", []string{"s", "S", "u"}, 0, -1},
		{"instructions alone are no progress", []string{"s", "s", "u", "a"}, 0, 3},
		{"only instructions", []string{"s"}, 0, -1},
		{"the earlier summary is compacted with the rest", []string{"s", "S", "u", "a", "u", "a"}, 2, 4},
		{"instructions given mid-way stay out of the count", []string{"s", "u", "a", "s", "u", "a"}, 2, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := conv(40, tt.spec...)
			per := provider.EstimateMessageTokens(cairn.Message{Content: strings.Repeat("x", 40)})
			c, ok := chooseCut(msgs, tt.keep*per+per/2)
			got := -1
			if ok {
				got = c.keep
			}
			if got != tt.want {
				t.Fatalf("cut at %d, want %d", got, tt.want)
			}
			if !ok {
				return
			}
			if c.upTo != msgs[c.keep-1].Seq {
				t.Errorf("up to %d, want the seq of the last message compacted, %d", c.upTo, msgs[c.keep-1].Seq)
			}
			var want []cairn.Message
			for _, m := range msgs[:c.keep] {
				if !m.IsInstructions() {
					want = append(want, m)
				}
			}
			if !slices.EqualFunc(c.compacted, want, func(x, y cairn.Message) bool { return x.Seq == y.Seq }) {
				t.Errorf("compacted %v, want every message before the cut but the instructions", c.compacted)
			}
		})
	}
}

// Random sessions, compacted at random budgets through the real fold: the
// history a model sees always pairs each tool call with its result, keeps
// the calls that wait for one, keeps the instructions first, and each
// compaction makes progress.
func TestChooseCut_Random(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	compactions := 0
	defer func() {
		if compactions < 200 {
			t.Errorf("%d compactions in all; the test exercises too few", compactions)
		}
	}()
	for round := range 200 {
		var events []cairn.Event
		st := cairn.NewState()
		add := func(kind cairn.Kind, v any) {
			e := cairn.MustEvent(kind, "r", v)
			e.V, e.Seq = cairn.FormatVersion, st.LastSeq+1
			if err := st.Apply(e); err != nil {
				t.Fatal(err)
			}
			events = append(events, e)
		}
		text := func() string { return strings.Repeat("w", rng.IntN(200)) }
		add(cairn.KindMessageSystem, cairn.MessageSystem{Text: "rules " + text()})
		calls := 0
		for step := range 60 {
			switch r := rng.IntN(10); {
			case len(st.Pending) > 0 && r < 7:
				p := st.Pending[rng.IntN(len(st.Pending))]
				add(cairn.KindToolResult, cairn.ToolResult{CallID: p.ID, Name: p.Name, Output: text()})
			case r == 7:
				add(cairn.KindMessageSystem, cairn.MessageSystem{Text: "more rules"})
			case r < 4:
				add(cairn.KindMessageUser, cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: text()}}})
			default:
				var cs []cairn.ToolCall
				for range rng.IntN(3) {
					calls++
					cs = append(cs, cairn.ToolCall{ID: fmt.Sprint("c", calls), Name: "calc", Args: json.RawMessage(`{}`)})
				}
				add(cairn.KindModelResponse, cairn.ModelResponse{Text: text(), ToolCalls: cs})
			}
			if step%7 != 6 {
				continue
			}
			before := slices.Clone(st.Messages)
			c, ok := chooseCut(st.Messages, rng.IntN(400))
			if !ok {
				continue
			}
			add(cairn.KindMemoryCompacted, cairn.MemoryCompacted{Summary: dropSummary(c.compacted), UpTo: c.upTo})
			compactions++
			checkCompacted(t, round, before, st)
		}
	}
}

func checkCompacted(t *testing.T, round int, before []cairn.Message, st *cairn.State) {
	t.Helper()
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("round %d: "+format+"\nbefore: %v\nafter:  %v", append(append([]any{round}, a...), before, st.Messages)...)
	}
	asked := map[string]bool{}
	real := func(m cairn.Message) bool { return !m.IsInstructions() && !m.IsSummary() }
	summaries, realBefore, realAfter := 0, 0, 0
	for _, m := range before {
		if real(m) {
			realBefore++
		}
	}
	for i, m := range st.Messages {
		if m.IsSummary() {
			summaries++
		}
		if real(m) {
			realAfter++
		}
		if m.IsSummary() && !slices.ContainsFunc(st.Messages[:i], cairn.Message.IsInstructions) {
			fail("the summary does not follow the instructions")
		}
		if m.IsSummary() && slices.ContainsFunc(st.Messages[:i], func(m cairn.Message) bool { return !m.IsInstructions() }) {
			fail("the summary follows other messages than the instructions")
		}
		for _, c := range m.ToolCalls {
			asked[c.ID] = true
		}
		if m.Role == cairn.RoleTool && !asked[m.ToolCallID] {
			fail("the result of %s is kept without its call", m.ToolCallID)
		}
	}
	if summaries != 1 {
		fail("%d summaries, want 1", summaries)
	}
	for _, p := range st.Pending {
		if !asked[p.ID] {
			fail("pending call %s was compacted away", p.ID)
		}
	}
	if realAfter >= realBefore || realAfter == 0 {
		fail("%d messages kept of %d: no progress, or nothing kept", realAfter, realBefore)
	}
	if first := st.Messages[slices.IndexFunc(st.Messages, cairn.Message.IsSummary)+1]; first.Role == cairn.RoleTool {
		fail("the first message kept is a tool result")
	}
}

func TestDropSummary(t *testing.T) {
	msgs := conv(1, "u", "a", "u")
	if got, want := dropSummary(msgs), "[3 earlier messages were dropped to fit the context window.]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := dropSummary(msgs[:1]), "[1 earlier message was dropped to fit the context window.]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// An earlier note is counted in; an earlier summary's text is kept.
	prev := cairn.Message{Role: cairn.RoleSystem, Name: cairn.SummaryName, Content: "The user is Ada.\n\n[3 earlier messages were dropped to fit the context window.]"}
	if got, want := dropSummary(append([]cairn.Message{prev}, msgs...)), "The user is Ada.\n\n[6 earlier messages were dropped to fit the context window.]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	prev.Content = "[1 earlier message was dropped to fit the context window.]"
	if got, want := dropSummary(append([]cairn.Message{prev}, msgs[:1]...)), "[2 earlier messages were dropped to fit the context window.]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDefaultContextTokens(t *testing.T) {
	for id, want := range map[string]int{
		"openai:gpt-4o-mini":                128_000,
		"openai:gpt-4o":                     128_000,
		"openai:gpt-4.1-nano":               1_047_576,
		"openai:gpt-4":                      8_192,
		"openai:gpt-5-mini":                 400_000,
		"openai:o1-mini":                    128_000,
		"openai:o3-mini":                    200_000,
		"anthropic:claude-sonnet-4-5":       200_000,
		"openai:anthropic/claude-3-5-haiku": 200_000,
		"openai:llama3.2":                   DefaultUnknownContextTokens,
		"offline":                           DefaultLocalContextTokens,
		"script:/x/steps.json":              DefaultLocalContextTokens,
		"gpt-4o":                            128_000,
		"":                                  DefaultUnknownContextTokens,
	} {
		if got := DefaultContextTokens(id); got != want {
			t.Errorf("DefaultContextTokens(%q) = %d, want %d", id, got, want)
		}
	}
}
