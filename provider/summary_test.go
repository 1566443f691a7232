package provider_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
)

func TestEstimateTokens(t *testing.T) {
	msgs := []cairn.Message{
		{Role: cairn.RoleSystem, Content: "Be brief."},                                                                                    // 9 bytes: 3 + 4
		{Role: cairn.RoleUser, Content: "", Parts: []cairn.Part{{Type: "image"}}},                                                         // 0 + 4 + 256
		{Role: cairn.RoleAssistant, ToolCalls: []cairn.ToolCall{{ID: "c1", Name: "calc", Args: json.RawMessage(`{"expression":"1+2"}`)}}}, // 2+4+20 = 26: 7 + 4
		{Role: cairn.RoleTool, ToolCallID: "c1", Name: "calc", Content: "3"},                                                              // 2+4+1 = 7: 2 + 4
	}
	want := []int{7, 260, 11, 6}
	for i, m := range msgs {
		if got := provider.EstimateMessageTokens(m); got != want[i] {
			t.Errorf("message %d: %d tokens, want %d", i, got, want[i])
		}
	}
	tools := []provider.Tool{{Name: "calc", Description: "Arithmetic.", Schema: json.RawMessage(`{"type":"object"}`)}} // 4+11+17 = 32: 8 + 8
	if got := provider.EstimateToolTokens(tools); got != 16 {
		t.Errorf("tools: %d tokens, want 16", got)
	}
	if got := provider.EstimateTokens(&provider.Request{Messages: msgs, Tools: tools}); got != 7+260+11+6+16 {
		t.Errorf("request: %d tokens, want %d", got, 7+260+11+6+16)
	}
	// Multi-byte text counts by its bytes: about a token a character for
	// most scripts that take three bytes a character.
	if got := provider.EstimateMessageTokens(cairn.Message{Content: strings.Repeat("日", 8)}); got != 6+4 {
		t.Errorf("8 CJK characters: %d tokens, want 10", got)
	}
}

func user(s string) cairn.Message { return cairn.Message{Role: cairn.RoleUser, Content: s} }

func answer(s string, calls ...string) cairn.Message {
	m := cairn.Message{Role: cairn.RoleAssistant, Content: s}
	for i, name := range calls {
		m.ToolCalls = append(m.ToolCalls, cairn.ToolCall{ID: fmt.Sprint("c", i), Name: name, Args: json.RawMessage(`{}`)})
	}
	return m
}

func summaryOf(s string) cairn.Message {
	return cairn.Message{Role: cairn.RoleSystem, Name: cairn.SummaryName, Content: s}
}

func TestDigest(t *testing.T) {
	req := &provider.Request{Purpose: provider.PurposeSummary, Messages: []cairn.Message{
		user("I am Ada"), answer("", "remember"), {Role: cairn.RoleTool, ToolCallID: "c0", Name: "remember", Content: "ok"},
		answer("Noted."), user("calc 2*21"), answer("", "calc"),
	}}
	first := provider.Digest(req)
	want := "Summary of 6 earlier messages (turns 1-2).\nFirst user message: \"I am Ada\"\nLast user message: \"calc 2*21\"\nTools used: calc, remember"
	if first != want {
		t.Fatalf("digest\n got %q\nwant %q", first, want)
	}
	if provider.Digest(req) != first {
		t.Error("the same request gives another digest")
	}
	if n := provider.DigestTurns(first); n != 2 {
		t.Errorf("DigestTurns = %d, want 2", n)
	}
	// The next digest folds this one in: the counts go on, the first
	// message stays, the tools join.
	req.Messages = []cairn.Message{summaryOf(first), user("what time is it?"), answer("", "clock"), answer("Noon.")}
	second := provider.Digest(req)
	want = "Summary of 9 earlier messages (turns 1-3).\nFirst user message: \"I am Ada\"\nLast user message: \"what time is it?\"\nTools used: calc, clock, remember"
	if second != want {
		t.Fatalf("second digest\n got %q\nwant %q", second, want)
	}
	// An earlier summary of another kind is kept, shortened.
	req.Messages = []cairn.Message{summaryOf("The user, Ada, likes tea.\n\nMore."), answer("Hello.")}
	third := provider.Digest(req)
	want = "Summary of 1 earlier message (no turns).\nEarlier: \"The user, Ada, likes tea.\\n\\nMore.\""
	if third != want {
		t.Fatalf("digest after a foreign summary\n got %q\nwant %q", third, want)
	}
	if provider.DigestTurns("The user, Ada, likes tea.") != 0 {
		t.Error("DigestTurns counts turns in a summary that is not a digest")
	}
	req.Messages = []cairn.Message{summaryOf(third), user("bye")}
	if got := provider.Digest(req); !strings.Contains(got, "Earlier: \"The user, Ada, likes tea.\\n\\nMore.\"") || !strings.HasPrefix(got, "Summary of 2 earlier messages (turns 1-1).") {
		t.Errorf("the earlier text is not carried on: %q", got)
	}
}

// A digest stays bounded however long the messages and however many
// digests it folds in.
func TestDigest_Bounded(t *testing.T) {
	long := strings.Repeat("long words ", 500)
	summary := ""
	for i := range 50 {
		var msgs []cairn.Message
		if summary != "" {
			msgs = append(msgs, summaryOf(summary))
		}
		msgs = append(msgs, user(long), answer(long, fmt.Sprintf("tool_with_a_long_name_%d", i)), user(long+"end"))
		summary = provider.Digest(&provider.Request{Purpose: provider.PurposeSummary, Messages: msgs})
		if len(summary) > 1000 {
			t.Fatalf("digest %d is %d bytes", i, len(summary))
		}
	}
	if !strings.HasPrefix(summary, "Summary of 150 earlier messages (turns 1-100).") || !strings.Contains(summary, ", …") {
		t.Errorf("digest %q", summary)
	}
	small := provider.Digest(&provider.Request{Messages: []cairn.Message{user(long)}, SummaryTokens: 20})
	if len(small) > 80 {
		t.Errorf("digest of %d bytes for a 20-token summary", len(small))
	}
}

func TestSummaryPrompt(t *testing.T) {
	req := &provider.Request{Purpose: provider.PurposeSummary, SummaryTokens: 200, Messages: []cairn.Message{
		summaryOf("Ada likes tea."), user("hi"), answer("", "calc"),
		{Role: cairn.RoleTool, ToolCallID: "c0", Name: "calc", Content: "boom", IsError: true}, answer("Done."),
	}}
	p := provider.SummaryPrompt(req)
	if len(p) != 2 || p[0].Role != cairn.RoleSystem || p[1].Role != cairn.RoleUser {
		t.Fatalf("prompt %+v, want a system and a user message", p)
	}
	if !strings.HasPrefix(p[0].Content, provider.SummaryInstruction) || !strings.HasSuffix(p[0].Content, "Use at most about 150 words.") {
		t.Errorf("instruction %q", p[0].Content)
	}
	want := "<earlier_summary>\nAda likes tea.\n</earlier_summary>\n\n<messages>\n[user]: hi\n[assistant calls calc, call c0]: {}\n" +
		"[tool calc error, call c0]: boom\n[assistant]: Done.\n</messages>\n\nWrite the summary now."
	if p[1].Content != want {
		t.Errorf("input\n got %q\nwant %q", p[1].Content, want)
	}
}
