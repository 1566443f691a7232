package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Keys as a terminal sends them.
const (
	keyLeft  = "\x1b[D"
	keyUp    = "\x1b[A"
	keyCtrlC = "\x03"
	keyCtrlD = "\x04"
	keyEnter = "\r"
)

// userTexts returns the texts of a session's message.user events.
func (c *cliEnv) userTexts(id string) []string {
	c.t.Helper()
	var out []string
	for _, e := range c.mustShow(id).Events {
		if e.Kind != "message.user" {
			continue
		}
		var d struct {
			Parts []struct{ Text string } `json:"parts"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			c.t.Fatal(err)
		}
		out = append(out, d.Parts[0].Text)
	}
	return out
}

// kinds returns the kinds of a session's events.
func (c *cliEnv) kinds(id string) []string {
	c.t.Helper()
	var out []string
	for _, e := range c.mustShow(id).Events {
		out = append(out, e.Kind)
	}
	return out
}

// interruptedChat starts a chat of session id whose model (script:slow.json)
// takes a minute to answer, says text, and cancels the turn with Ctrl+C:
// the turn is saved as interrupted and the chat goes on, at its prompt.
func (c *cliEnv) interruptedChat(id, text string) *ptyProc {
	c.t.Helper()
	c.writeFile("slow.json", `{"steps":[{"text":"a slow answer, never said","delay_ms":60000}]}`)
	p := c.startTerm("xterm", "--model", "script:slow.json", "chat", "--session", id)
	p.expect("> ")
	p.send(text + keyEnter)
	p.expect("thinking…")
	p.send(keyCtrlC)
	p.expect("the turn is saved as interrupted")
	p.expect("> ") // the chat goes on
	return p
}

// TestChat_LineEditor types as a person does at a real terminal: Left to
// fix a word, Up for the last message, Tab to complete a command, a line
// that goes on with \, /help; the session holds the texts as edited,
// never the keys' escape codes.
func TestChat_LineEditor(t *testing.T) {
	c := newCLIEnv(t)
	p := c.startTerm("xterm", "chat", "--session", "ed")
	p.expect("/help lists the commands")
	p.expect("> ")
	p.send("abc" + keyLeft + "X" + keyEnter)
	p.expect(`You said "abXc"`)
	p.expect("> ")
	p.send(keyUp + keyEnter) // the history: the same message again
	p.expect(`Turn 2. You said "abXc"`)
	p.expect("> ")
	p.send("/he\t" + keyEnter) // Tab completes /help
	p.expect("Commands:")
	p.expect("/fork [NEWID]")
	p.expect("> ")
	p.send(`first line\` + keyEnter)
	p.expect("… ")
	p.send("second line" + keyEnter)
	p.expect("Turn 3.")
	p.expect("> ")
	p.send(keyUp + keyEnter) // the continued message comes back whole
	p.expect(`Turn 4. You said "first line second line"`)
	p.expect("> ")
	p.send("/nonsense" + keyEnter)
	p.expect("unknown command /nonsense")
	p.expect("> ")
	p.send("//etc is a folder" + keyEnter)
	p.expect(`You said "/etc is a folder"`)
	p.expect("> ")
	p.send("/show" + keyEnter)
	p.expect("status    completed")
	p.expect("(/transcript lists them)")
	p.expect("> ")
	p.send("/transcript" + keyEnter)
	p.expect("user: /etc is a folder")
	p.expect("> ")
	p.send(keyCtrlD)
	if code := p.wait(); code != 0 {
		t.Fatalf("chat after Ctrl+D exited %d, want 0\n%s", code, p.output())
	}
	got := c.userTexts("ed")
	want := []string{"abXc", "abXc", "first line\nsecond line", "first line second line", "/etc is a folder"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the session holds the messages %q, want %q", got, want)
	}
	// The history is kept for the next chat.
	hist, err := os.ReadFile(filepath.Join(c.dir, ".home", ".local", "share", "cairn", "chat_history"))
	if err != nil || !strings.Contains(string(hist), "abXc") {
		t.Errorf("chat history: %q, %v", hist, err)
	}
	if h := "\n" + string(hist); !strings.Contains(h, "\nfirst line second line\n") || strings.Contains(h, "\nsecond line\n") {
		t.Errorf("chat history %q: the continued message is not one entry", hist)
	}
	p = c.startTerm("xterm", "chat", "--session", "ed2")
	p.expect("> ")
	p.send(keyUp + keyUp + keyEnter) // two back: the last two were /show and //etc…
	p.expect("> ")
	p.send(keyCtrlD)
	p.wait()
}

// TestChat_CtrlCCancelsTheTurn: Ctrl+C while the model works cancels the
// turn, which is recorded as run.interrupted, and the chat goes on; two
// Ctrl+C at the prompt quit with 130 (one right after a cancelled turn
// does: see TestChat_CtrlCTwice). A resumed chat shows the last turns, uses
// the session's model, and offers to finish the interrupted turn.
func TestChat_CtrlCCancelsTheTurn(t *testing.T) {
	c := newCLIEnv(t)
	p := c.interruptedChat("cc", "Hello, my name is Ada")
	p.send("/show" + keyEnter)
	p.expect("status    interrupted")
	p.expect("> ")
	p.send(keyCtrlC) // after a command, Ctrl+C at the prompt asks first
	p.expect("Ctrl+C again or Ctrl+D to quit")
	p.send(keyCtrlC) // the second quits
	if code := p.wait(); code != 130 {
		t.Fatalf("chat after a second Ctrl+C exited %d, want 130\n%s", code, p.output())
	}
	p.expect("cairn chat --resume cc")
	kinds := c.kinds("cc")
	if kinds[len(kinds)-1] != "run.interrupted" {
		t.Fatalf("events %v: want the turn recorded as run.interrupted", kinds)
	}

	// Resume: the last turns are shown, and the interrupted one can be
	// finished, here with another model (the recorded one is 60 s slow).
	c.writeFile("fast.json", `{"steps":[{"text":"finished at last"}]}`)
	p = c.startTerm("xterm", "--model", "script:fast.json", "chat", "--resume", "cc")
	p.expect("you: Hello, my name is Ada")
	p.expect("Finish it now? [Y/n]")
	p.send(keyEnter)
	p.expect("finished at last")
	p.expect("> ")
	p.send(keyCtrlD)
	if code := p.wait(); code != 0 {
		t.Fatalf("resumed chat exited %d\n%s", code, p.output())
	}
	if n := strings.Count(p.output(), "was last run by a different agent"); n != 1 {
		t.Errorf("the different-agent warning is printed %d times, want once:\n%s", n, p.output())
	}
	s, _ := c.show("cc")
	if s.Info.Status != "completed" {
		t.Errorf("status after finishing the turn: %s", s.Info.Status)
	}
}

// TestChat_NothingSaidNothingSaved: Ctrl+C twice at the first prompt quits
// (130) without leaving an empty session behind.
func TestChat_NothingSaidNothingSaved(t *testing.T) {
	c := newCLIEnv(t)
	p := c.startTerm("xterm", "chat")
	p.expect("> ")
	p.send(keyCtrlC)
	p.expect("Ctrl+C again or Ctrl+D to quit")
	p.expect("> ")
	p.send(keyCtrlC)
	if code := p.wait(); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, p.output())
	}
	p.expect("no session was saved")
	out, stderr, code := c.run("--json", "sessions", "list")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("sessions after an empty chat: exit %d\n%s%s", code, out, stderr)
	}
}

// TestChat_CtrlCTwice: a Ctrl+C that cancels a turn and a second one at
// the prompt quit the chat.
func TestChat_CtrlCTwice(t *testing.T) {
	c := newCLIEnv(t)
	p := c.interruptedChat("twice", "go")
	p.send(keyCtrlC)
	if code := p.wait(); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, p.output())
	}
	if s, _ := c.show("twice"); s.Info.Status != "interrupted" {
		t.Fatalf("status %s, want interrupted", s.Info.Status)
	}
}
