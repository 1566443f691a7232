package cairn_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestFold_Conversation(t *testing.T) {
	evs := storetest.Conversation(0, "r1", "What is 2*(3+4)?")
	st, err := cairn.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != cairn.StatusCompleted || st.Output != "The answer is 14." {
		t.Errorf("status %q output %q, want completed and the answer", st.Status, st.Output)
	}
	if st.Steps != 4 || st.Responses != 2 || st.RunSteps != 2 {
		t.Errorf("steps %d responses %d run steps %d, want 4 2 2", st.Steps, st.Responses, st.RunSteps)
	}
	if len(st.Pending) != 0 {
		t.Errorf("pending %v, want none: every call has a result", st.Pending)
	}
	if st.Usage.InputTokens != 12 || st.Usage.OutputTokens != 7 {
		t.Errorf("usage %+v", st.Usage)
	}
	var user struct{ Name string }
	if ok, err := st.Var("user", &user); !ok || err != nil || user.Name != "Alice" {
		t.Errorf("variable user = %+v (%v, %v)", user, ok, err)
	}
	if _, ok := st.Variables["tmp"]; ok {
		t.Error("deleted variable tmp is still set")
	}
	if !st.Approvals["call_2"].Approved {
		t.Error("approval of call_2 not folded")
	}
	// Compaction replaced the turns up to seq 4 with the summary, after
	// the instructions, which it keeps.
	if m := st.Messages[0]; !m.IsInstructions() || m.Content != "You are a careful assistant." {
		t.Errorf("first message after compaction = %+v, want the instructions", m)
	}
	if m := st.Messages[1]; !m.IsSummary() || m.Content != "The user asked for arithmetic." || m.Seq != 13 {
		t.Errorf("second message after compaction = %+v, want the summary", m)
	}
	if st.FirstMessage != "What is 2*(3+4)?" {
		t.Errorf("first message = %q", st.FirstMessage)
	}
}

func TestFold_PendingAndReset(t *testing.T) {
	evs := storetest.Conversation(0, "r1", "hi")
	if _, err := cairn.Fold(append(evs[:5:5], evs[8])); err == nil {
		t.Fatal("fold with a seq gap succeeded")
	}
	// Stop after the model asked for two calls and one has its result.
	st, err := cairn.Fold(evs[:6])
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Pending) != 1 || st.Pending[0].ID != "call_2" || st.Pending[0].Started {
		t.Fatalf("pending = %+v, want call_2 not started", st.Pending)
	}
	started := storetest.Number(6, cairn.MustEvent(cairn.KindToolStarted, "r1", cairn.ToolStarted{CallID: "call_2", Name: "append_file", Args: json.RawMessage(`{}`)}))
	if err := st.Apply(started[0]); err != nil {
		t.Fatal(err)
	}
	if !st.Pending[0].Started {
		t.Fatal("tool.started did not mark the call started")
	}
	reset := storetest.Number(7, cairn.MustEvent(cairn.KindMemoryReset, "r2", cairn.MemoryReset{}))
	if err := st.Apply(reset[0]); err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) != 0 || len(st.Pending) != 0 || st.Responses != 0 || len(st.Variables) != 0 {
		t.Fatalf("after reset: %d messages, %d pending, %d responses, %d variables", len(st.Messages), len(st.Pending), st.Responses, len(st.Variables))
	}
	if st.Steps != 2 || st.FirstMessage != "hi" {
		t.Errorf("steps %d first %q: the session's totals survive a reset", st.Steps, st.FirstMessage)
	}
}

func TestState_SnapshotCanonical(t *testing.T) {
	a := storetest.Conversation(0, "r1", "x")
	b := storetest.Conversation(0, "r1", "x")
	// The same variable written with other key order and spacing.
	for i, e := range b {
		if e.Kind == cairn.KindStateSet && strings.Contains(string(e.Data), "Alice") {
			b[i].Data = json.RawMessage(`{"set":{"tmp":1.50,"user":{ "n":12345678901234567890, "name":"Alice"}},"deleted":null}`)
		}
	}
	sa, _ := cairn.Fold(a)
	sb, _ := cairn.Fold(b)
	ja, _ := sa.Snapshot()
	jb, _ := sb.Snapshot()
	if string(ja) != string(jb) {
		t.Fatalf("snapshots differ for the same values:\n%s\n%s", ja, jb)
	}
	if !strings.Contains(string(ja), "12345678901234567890") {
		t.Error("a large integer lost precision in the snapshot")
	}
}

func TestValidateID(t *testing.T) {
	for _, id := range []string{"a", "review-pr-42", "A_b-9", strings.Repeat("x", 128), cairn.NewID()} {
		if err := cairn.ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", id, err)
		}
	}
	bad := []string{
		"", "a b", "ü", strings.Repeat("x", 129), "a\nb",
		// Path tricks: a session ID becomes a file or folder name in the
		// file store and part of a key or schema elsewhere.
		".", "..", "...", ".hidden", "a.", "a.b", "../x", "..\\x", "a/b", "/abs", `a\b`, "./a", "a/..",
		"~", "~root", "C:", "a:b", "a\x00b", "\x00", "a\tb", "%2e%2e", "%2fx", "a%2Fb", "a*", "a?", "a|b",
		"ａ",        // a fullwidth a
		"a\u2024b", // a one-dot leader, a dot look-alike
		"a\u2215b", // a division slash, a slash look-alike
		"x\u200b",  // a zero-width space
		"\xff",     // not UTF-8
	}
	for _, id := range bad {
		if err := cairn.ValidateID(id); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalidID", id, err)
		}
		if err := driver.ValidateNamespace(id); !errors.Is(err, cairn.ErrInvalidID) {
			t.Errorf("ValidateNamespace(%q) = %v, want ErrInvalidID", id, err)
		}
	}
}

func TestNewID_TimeOrdered(t *testing.T) {
	prev := cairn.NewID()
	for range 100 {
		id := cairn.NewID()
		if id <= prev {
			t.Fatalf("NewID %q after %q: not increasing", id, prev)
		}
		prev = id
	}
}

func TestCheckAppend(t *testing.T) {
	evs := storetest.UserTurn(0, "r", "x")
	if _, err := driver.CheckAppend(cairn.Limits{}, "s", 0, evs); err != nil {
		t.Fatalf("valid append: %v", err)
	}
	if _, err := driver.CheckAppend(cairn.Limits{}, "s", 1, evs); !errors.Is(err, cairn.ErrInvalidEvent) {
		t.Errorf("seqs not following expect: %v", err)
	}
	if _, err := driver.CheckAppend(cairn.Limits{MaxEventBytes: 200}, "s", 0, []cairn.Event{storetest.Padded(1, 1000)}); !errors.Is(err, cairn.ErrTooLarge) {
		t.Errorf("oversize event: %v", err)
	}
	if _, err := driver.CheckAppend(cairn.Limits{}, "../s", 0, evs); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("bad id: %v", err)
	}
}

// A compaction keeps the instructions first, in order, puts its summary
// after them, and replaces an earlier summary, whatever its up-to seq.
func TestFold_CompactionKeepsInstructions(t *testing.T) {
	user := func(text string) cairn.Event {
		return cairn.MustEvent(cairn.KindMessageUser, "r", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: text}}})
	}
	answer := func(text string) cairn.Event {
		return cairn.MustEvent(cairn.KindModelResponse, "r", cairn.ModelResponse{Text: text})
	}
	system := func(text string) cairn.Event {
		return cairn.MustEvent(cairn.KindMessageSystem, "r", cairn.MessageSystem{Text: text})
	}
	compacted := func(summary string, upTo int64) cairn.Event {
		return cairn.MustEvent(cairn.KindMemoryCompacted, "r", cairn.MemoryCompacted{Summary: summary, UpTo: upTo})
	}
	evs := storetest.Number(0,
		system("Be brief."), // 1
		system("Speak French."),
		user("one"),
		answer("un"),
		system("Now speak German."), // 5: instructions given mid-way
		user("two"),
		answer("zwei"),
		compacted("first summary", 4), // 8
		user("three"),
		answer("drei"),
		compacted("second summary", 7), // 11: up to a seq before the first summary's
	)
	type msg struct {
		seq     int64
		role    string
		content string
		summary bool
	}
	got := func(st *cairn.State) []msg {
		var out []msg
		for _, m := range st.Messages {
			out = append(out, msg{m.Seq, m.Role, m.Content, m.IsSummary()})
		}
		return out
	}
	st, err := cairn.Fold(evs[:8])
	if err != nil {
		t.Fatal(err)
	}
	want := []msg{
		{1, "system", "Be brief.", false}, {2, "system", "Speak French.", false},
		{8, "system", "first summary", true},
		{5, "system", "Now speak German.", false}, {6, "user", "two", false}, {7, "assistant", "zwei", false},
	}
	if g := got(st); !slices.Equal(g, want) {
		t.Errorf("after the first compaction\n got %v\nwant %v", g, want)
	}
	st, err = cairn.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	want = []msg{
		{1, "system", "Be brief.", false}, {2, "system", "Speak French.", false}, {5, "system", "Now speak German.", false},
		{11, "system", "second summary", true},
		{9, "user", "three", false}, {10, "assistant", "drei", false},
	}
	if g := got(st); !slices.Equal(g, want) {
		t.Errorf("after the second compaction\n got %v\nwant %v", g, want)
	}
}
