package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/sessions"
)

// chatCommand is a command typed at the chat's prompt.
type chatCommand struct {
	name, args, help string
}

// chatCommands are the chat's commands, as /help lists them.
var chatCommands = []chatCommand{
	{"/help", "", "this list"},
	{"/quit", "", "end the chat (also /exit, Ctrl+D); the session stays saved"},
	{"/exit", "", "end the chat"},
	{"/sessions", "", "the most recently updated sessions of the store"},
	{"/show", "", "the state of this session: status, steps, tokens, variables"},
	{"/transcript", "", "this session's conversation, as `cairn sessions show ID --transcript` prints it"},
	{"/fork", "[NEWID]", "copy this session into a new one and go on there (this one is kept as it is)"},
	{"/new", "", "start a new session with the next message"},
}

// command runs a command typed at the prompt; quit reports whether the
// chat ends.
func (ch *chat) command(line string) (quit bool, err error) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/help", "/?":
		ch.help()
	case "/quit", "/exit":
		return true, nil
	case "/sessions":
		return false, ch.sessions()
	case "/show":
		return false, ch.show()
	case "/transcript":
		return false, ch.transcript()
	case "/fork":
		return false, ch.fork(arg)
	case "/new":
		ch.release()
		ch.s, ch.newID = nil, ""
		ch.app.Notef("the next message starts a new session")
	default:
		return false, cli.Usage("/help lists the commands; //text sends \"/text\" as a message", "unknown command %s", name)
	}
	return false, nil
}

func (ch *chat) help() {
	w := ch.app.Stderr
	fmt.Fprintln(w, "Commands:")
	for _, c := range chatCommands {
		fmt.Fprintf(w, "  %-20s %s\n", strings.TrimSpace(c.name+" "+c.args), c.help)
	}
	fmt.Fprintln(w, `  //text               send "/text" as a message`)
	fmt.Fprintln(w, "Keys:")
	fmt.Fprintln(w, "  Enter                send; a line that ends in \\ goes on on the next line")
	fmt.Fprintln(w, "  Up, Down, Ctrl+R     history (kept across chats)")
	fmt.Fprintln(w, "  Ctrl+C               cancel the turn under way (saved as interrupted); at the prompt, twice: quit")
	fmt.Fprintln(w, "  Ctrl+D               quit")
}

// recentSessions is how many sessions /sessions lists.
const recentSessions = 10

func (ch *chat) sessions() error {
	page, err := ch.store.List(ch.ctx, cairn.ListOptions{Limit: recentSessions})
	if err != nil {
		return cli.StoreFail("", fmt.Errorf("list sessions: %w", err))
	}
	if len(page.Sessions) == 0 {
		ch.app.Notef("no sessions saved yet")
		return nil
	}
	short, err := cli.StoreShortIDs(ch.ctx, ch.store, page.Sessions)
	if err != nil {
		return err
	}
	if err := cli.InfoTable(ch.app.Stderr, page.Sessions, short, time.Now()); err != nil {
		return err
	}
	if ch.s != nil {
		ch.app.Notef("this chat: %s", ch.s.ID())
	}
	return nil
}

func (ch *chat) show() error {
	if ch.s == nil {
		ch.app.Notef("no session yet: the first message starts it")
		return nil
	}
	rec, err := ch.store.Stat(ch.ctx, ch.s.ID())
	if err != nil {
		return cli.StoreFail(ch.s.ID(), err)
	}
	return showState(ch.app.Stderr, *rec, ch.s.State(), "/transcript lists them") // stdout holds the conversation
}

// transcript prints this session's conversation, as `cairn sessions show
// ID --transcript` does.
func (ch *chat) transcript() error {
	if ch.s == nil {
		ch.app.Notef("no session yet: the first message starts it")
		return nil
	}
	rec, err := ch.store.Load(ch.ctx, ch.s.ID(), 0)
	if err != nil {
		return cli.StoreFail(ch.s.ID(), err)
	}
	return cli.Transcript(ch.app.Stderr, rec.Events)
}

// fork copies the session into a new one and goes on there.
func (ch *chat) fork(newID string) error {
	if ch.s == nil {
		return cli.Usage("say something first", "there is no session to fork yet")
	}
	if newID == "" {
		newID = cairn.NewID()
	} else if err := cairn.ValidateID(newID); err != nil {
		return cli.BadID(err)
	}
	from := ch.s.ID()
	f, err := sessions.Fork(ch.ctx, ch.store, from, sessions.ForkOptions{As: newID})
	if err != nil {
		return forkFailed(from, newID, err)
	}
	ch.app.NoteSnapshot(ch.ctx, ch.store, newID, f.Events)
	s, err := ch.ag.Resume(ch.ctx, newID)
	if err != nil {
		return cli.StoreFail(newID, err)
	}
	cl, err := claimSession(ch.ctx, ch.app, s, ch.force, "cairn chat --session "+newID+" --force")
	if err != nil {
		return err
	}
	ch.release()
	ch.s, ch.claim = s, cl
	ch.app.Notef("forked %s as %s; this chat goes on in %s (%s is kept as it was)", from, newID, newID, from)
	return nil
}
