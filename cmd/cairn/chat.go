package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/cli"
)

// resumeFlag is --resume, with or without an ID: "--resume", "--resume
// ID" (the ID is then the command's argument) and "--resume=ID".
type resumeFlag struct {
	set bool
	id  string
}

func (r *resumeFlag) String() string { return r.id }
func (r *resumeFlag) Type() string   { return "bool" } // shown without a value in --help
func (r *resumeFlag) IsBoolFlag() bool {
	return true
}
func (r *resumeFlag) Set(v string) error {
	r.set = true
	if v != "true" {
		r.id = v
	}
	return nil
}

func newChatCmd(app *cli.App) *cobra.Command {
	var (
		session string
		resume  resumeFlag
		force   bool
		mem     memoryFlags
	)
	c := &cobra.Command{
		Use:   "chat [--session ID | --resume [ID]]",
		Short: "Chat with the agent; the conversation survives restarts",
		Long: `Chat with the agent. Every turn is saved as it happens; a session is
created with the first message, not before.

At a terminal the prompt is a line editor: arrows and the usual Emacs keys
edit the line, Up and Down walk the history (kept across chats), Tab
completes commands, a line that ends in \ goes on on the next line. While
the agent works, Ctrl+C cancels the turn (it is saved as interrupted) and
the chat goes on; Ctrl+C again, at the prompt, or Ctrl+D quits.

Commands: /help, /quit (or /exit), /sessions, /show, /transcript, /fork [NEWID], /new;
//text sends "/text" as a message.

--resume goes on with the most recently updated session, --resume ID with
that one (whole IDs, never prefixes): the last turns are shown, and an
interrupted turn can be finished first. The session goes on with the model
it was run with unless --model says otherwise. --session ID continues that
session, or starts it with that name. A session another process is running
is refused, naming that process; --force takes it over. --memory-ns
NAMESPACE gives the agent long-term memory in that namespace, and puts the
--recall memories that best match each message in front of it, as
` + "`cairn run`" + ` does.`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if len(a) == 1 {
				if !resume.set || resume.id != "" {
					return cli.Usage("chat takes no arguments but the ID after --resume", "unexpected argument %q", a[0])
				}
				resume.id = a[0]
			}
			if c.Flags().Changed("session") && resume.set {
				return cli.Usage("use one of them", "--session and --resume cannot be used together")
			}
			if c.Flags().Changed("session") {
				if err := cairn.ValidateID(session); err != nil {
					return cli.BadID(fmt.Errorf("--session: %w", err))
				}
			}
			if resume.id != "" {
				if err := cairn.ValidateID(resume.id); err != nil {
					return cli.BadID(fmt.Errorf("--resume: %w", err))
				}
			}
			if err := mem.check(c); err != nil {
				return err
			}
			store, ag, err := openRunAgent(c, app)
			if err != nil {
				return err
			}
			defer store.Close()
			defer mem.Close()
			if mem.ns != "" {
				if err := mem.attach(c.Context(), app, ag, nil, ""); err != nil {
					return err
				}
			}
			ch := &chat{app: app, ctx: c.Context(), store: store, ag: ag, force: force, mem: &mem}
			defer ch.release()
			if err := ch.open(resume, session); err != nil {
				return err
			}
			ch.in = newLineReader(ch.ctx, app)
			defer ch.in.Close()
			return ch.loop()
		},
	}
	c.Flags().StringVar(&session, "session", "", "continue (or start) the session with this ID")
	c.Flags().Var(&resume, "resume", "go on with a session: the ID given after it, else the most recently updated")
	c.Flags().Lookup("resume").NoOptDefVal = "true"
	c.Flags().BoolVar(&force, "force", false, "take the session over from the process that runs it (its writes are refused from then on)")
	mem.add(c)
	return c
}

// chat is one `cairn chat`: the session it runs (made with the first
// message when it is new), the claim on it, and the prompt.
type chat struct {
	app   *cli.App
	ctx   context.Context
	store cairn.Store
	ag    *agent.Agent
	force bool
	in    lineReader
	mem   *memoryFlags

	s      *agent.Session // nil until the first message of a new session
	newID  string         // the ID a new session is to have ("" for a generated one)
	claim  *agent.Claim
	ctrlC  bool // the last key was Ctrl+C: another one quits
	resume bool // offer to finish an interrupted turn before the first prompt
}

// open finds the session the flags name.
func (ch *chat) open(resume resumeFlag, session string) error {
	ctx := ch.ctx
	id := resume.id
	switch {
	case resume.set && id == "":
		recent, err := mostRecentIn(ctx, ch.store)
		if err != nil {
			return err
		}
		id = recent
	case resume.set:
		loc, err := ch.app.Locate(ctx, id, cli.LocateOptions{Exact: true, Command: "cairn chat --resume"})
		if err != nil {
			return err
		}
		loc.Store.Close()
		id = loc.ID
	case session != "":
		s, err := ch.ag.Resume(ctx, session)
		if errors.Is(err, cairn.ErrNotFound) {
			ch.newID = session // created with the first message
			return nil
		}
		if err != nil {
			return cli.StoreFail(session, err)
		}
		return ch.take(s)
	default:
		return nil
	}
	s, err := ch.ag.Resume(ctx, id)
	if err != nil {
		return cli.StoreFail(id, err)
	}
	return ch.take(s)
}

// take makes s the chat's session: with the model it was run with, claimed,
// its last turns shown.
func (ch *chat) take(s *agent.Session) error {
	if err := ch.app.UseRecorded(ch.ag, s.State()); err != nil {
		return err
	}
	if ch.mem.ns == "" {
		ch.mem.fromSession(ch.app, s)
		if err := ch.mem.attach(ch.ctx, ch.app, ch.ag, s.State(), "cairn chat --resume "+s.ID()); err != nil {
			return err
		}
	}
	cl, err := claimSession(ch.ctx, ch.app, s, ch.force, "cairn chat --session "+s.ID()+" --force")
	if err != nil {
		return err
	}
	ch.s, ch.claim = s, cl
	ch.showRecent()
	return nil
}

// release gives up the claim on the session.
func (ch *chat) release() {
	releaseClaim(ch.ctx, ch.app, ch.claim)
	ch.claim = nil
}

// start creates the session with the first message.
func (ch *chat) start() error {
	if ch.s != nil {
		return nil
	}
	opts := []agent.StartOption{agent.WithLabels(ch.mem.labels())}
	if ch.newID != "" {
		opts = append(opts, agent.WithID(ch.newID))
	}
	s, err := ch.ag.Start(ch.ctx, opts...)
	if err != nil {
		return cli.StoreFail(ch.newID, err)
	}
	cl, err := claimSession(ch.ctx, ch.app, s, ch.force, "cairn chat --session "+s.ID()+" --force")
	if err != nil {
		return err
	}
	ch.s, ch.claim, ch.newID = s, cl, ""
	ch.app.Notef("session %s", s.ID())
	return nil
}

// recentTurns is how many of the last messages a resumed chat shows.
const recentTurns = 6

// showRecent shows the last turns of the session and offers to finish an
// interrupted one.
func (ch *chat) showRecent() {
	st := ch.s.State()
	var msgs []cairn.Message
	compacted := false
	for _, m := range st.Messages {
		if m.Role == cairn.RoleUser || m.Role == cairn.RoleAssistant && m.Content != "" {
			msgs = append(msgs, m)
		}
		compacted = compacted || m.IsSummary()
	}
	if compacted {
		ch.app.Notef("session %s: %d recent message(s) and a summary of the earlier ones (`cairn sessions show %s --transcript` shows them all)", ch.s.ID(), len(msgs), ch.s.ID())
	} else {
		ch.app.Notef("session %s: %d message(s) so far", ch.s.ID(), len(msgs))
	}
	if len(msgs) > recentTurns {
		ch.app.Notef("  …")
		msgs = msgs[len(msgs)-recentTurns:]
	}
	for _, m := range msgs {
		who := "you"
		if m.Role == cairn.RoleAssistant {
			who = "assistant"
		}
		ch.app.Notef("  %s: %s", who, cli.OneLine(m.Content, 200))
	}
	switch st.Status {
	case cairn.StatusInterrupted, cairn.StatusRunning:
		ch.resume = true
	case cairn.StatusAwaiting:
		ch.app.Notef("the last turn waits for a decision on a tool call: `cairn sessions show %s` lists it; `cairn sessions resume %s --approve CALL_ID` (or --deny) decides",
			ch.s.ID(), ch.s.ID())
	}
}

// loop reads messages and commands until the person quits.
func (ch *chat) loop() error {
	if ch.in.Interactive() {
		ch.app.Notef("Ctrl+C cancels a turn, Ctrl+D quits, /help lists the commands")
	}
	if ch.resume {
		if err := ch.offerFinish(); err != nil {
			return err
		}
	}
	for {
		line, err := ch.read()
		switch {
		case errors.Is(err, errCtrlC):
			if ch.ctrlC {
				return ch.quitInterrupted()
			}
			ch.ctrlC = true
			ch.app.Notef("(Ctrl+C again or Ctrl+D to quit)")
			continue
		case errors.Is(err, io.EOF):
			ch.saidBye()
			return nil
		case err != nil:
			if ch.ctx.Err() != nil {
				return ch.quitInterrupted()
			}
			return err
		}
		ch.ctrlC = false
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		ch.in.AddHistory(historyEntry(line))
		if strings.HasPrefix(line, "/") && !strings.HasPrefix(line, "//") {
			quit, err := ch.command(line)
			if err != nil {
				ch.report(err)
			}
			if quit {
				ch.saidBye()
				return nil
			}
			continue
		}
		line = strings.TrimPrefix(line, "/")
		if err := ch.turn(func(ctx context.Context, opts []agent.RunOption) (*agent.Result, error) {
			if ch.s.Memory().LastSeq() > 0 {
				opts = append(opts, agent.Continue())
			}
			background, err := ch.mem.background(ctx, line)
			if err != nil {
				return nil, err
			}
			return ch.s.Run(ctx, line, append(opts, background...)...)
		}); err != nil {
			return err
		}
	}
}

// historyEntry is how a message is kept in the history: one entry, on one
// line, as the history file keeps one entry a line; the lines of a message
// continued with \ are joined with a space, as a shell joins a command
// continued so, and Up brings back the whole message.
func historyEntry(msg string) string {
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, " ")
}

// read reads one message: lines that end in \ go on on the next line.
func (ch *chat) read() (string, error) {
	var b strings.Builder
	prompt := "> "
	for {
		line, err := ch.in.Prompt(prompt)
		if err != nil {
			return "", err
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			b.WriteString(rest)
			b.WriteByte('\n')
			prompt = "… "
			continue
		}
		b.WriteString(line)
		return b.String(), nil
	}
}

// offerFinish asks whether to finish the interrupted turn of a resumed
// session, and does.
func (ch *chat) offerFinish() error {
	if !ch.in.Interactive() {
		ch.app.Notef("the last turn was interrupted; `cairn sessions resume %s` finishes it", ch.s.ID())
		return nil
	}
	answer, err := ch.in.Prompt("The last turn was interrupted. Finish it now? [Y/n] ")
	if err != nil && !errors.Is(err, errCtrlC) && !errors.Is(err, io.EOF) {
		return err
	}
	if err != nil || strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "n") {
		ch.app.Notef("left as it is; your next message goes on from there")
		return nil
	}
	return ch.turn(func(ctx context.Context, opts []agent.RunOption) (*agent.Result, error) {
		return ch.s.ResumeRun(ctx, opts...)
	})
}

// turn runs one turn of the agent: Ctrl+C cancels it (the agent records
// run.interrupted) and the chat goes on; a second Ctrl+C quits once the
// turn has stopped. It returns an error only when the chat must end.
func (ch *chat) turn(run func(context.Context, []agent.RunOption) (*agent.Result, error)) error {
	if err := ch.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ch.ctx)
	defer cancel()
	var cancelled atomic.Bool
	restore := ch.app.OnInterrupt(func() bool {
		if cancelled.Swap(true) {
			return false // the second: quit
		}
		cancel()
		return true
	})
	out := ch.app.NewRunOutput()
	res, err := run(ctx, out.Options())
	restore()
	out.Finish(res)
	ch.app.ReportWarnings(res)
	rerr := cli.RunError(ch.s.ID(), res, err)
	if rerr == nil {
		return nil
	}
	if ch.ctx.Err() != nil {
		return ch.quitInterrupted()
	}
	if cancelled.Load() {
		ch.ctrlC = true
		ch.app.Notef("interrupted: the turn is saved as interrupted; say what to do next (Ctrl+C again or Ctrl+D quits)")
		return nil
	}
	if _, _, code := cli.Describe(rerr); code == cli.ExitUnsaved {
		return rerr // events the store does not hold: stop and say so
	}
	ch.report(rerr)
	return nil
}

// report prints an error that does not end the chat.
func (ch *chat) report(err error) {
	msg, hint, _ := cli.Describe(err)
	fmt.Fprintf(ch.app.Stderr, "error: %s\nhint: %s\n", msg, hint)
}

// saidBye notes where the conversation is kept.
func (ch *chat) saidBye() {
	if ch.in.Interactive() {
		fmt.Fprintln(ch.app.Stderr)
	}
	if ch.s != nil {
		ch.app.Notef("session %s is saved; `cairn chat --resume %s` goes on", ch.s.ID(), ch.s.ID())
	}
}

// quitInterrupted is the end of a chat stopped with Ctrl+C (or SIGTERM).
func (ch *chat) quitInterrupted() error {
	if ch.in != nil && ch.in.Interactive() {
		fmt.Fprintln(ch.app.Stderr)
	}
	if ch.s == nil {
		return cli.Interrupted(errors.New("stopped; nothing was said, so no session was saved"), "`cairn chat` starts a new one")
	}
	return cli.Interrupted(fmt.Errorf("stopped; session %s is saved", ch.s.ID()), "go on with `cairn chat --resume "+ch.s.ID()+"`")
}

// mostRecentIn returns the most recently updated session of store.
func mostRecentIn(ctx context.Context, store cairn.Store) (string, error) {
	page, err := store.List(ctx, cairn.ListOptions{Limit: 1})
	if err != nil {
		return "", cli.Fail(fmt.Errorf("list sessions: %w", err), "`cairn doctor` checks the store")
	}
	if len(page.Sessions) == 0 {
		return "", cli.Fail(errors.New("there is no saved session to continue"), "start one with `cairn run \"…\"` or `cairn chat`")
	}
	return page.Sessions[0].ID, nil
}
