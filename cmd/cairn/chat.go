package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/cli"
)

const latest = "@latest"

func newChatCmd(app *cli.App) *cobra.Command {
	var session, resume string
	var force bool
	c := &cobra.Command{
		Use:   "chat [--session ID | --resume [ID]]",
		Short: "Chat with the agent; the conversation survives restarts",
		Long: `Chat with the agent, one line per turn. Every turn is saved as it happens:
stop with Ctrl+C (or Ctrl+D) and run ` + "`cairn chat --resume`" + ` to go on where you
stopped. --resume without an ID picks the most recently updated session;
--session ID continues that session, or starts it with that name. Both take
whole IDs, never prefixes. A session another process is running is
refused, naming that process; --force takes it over.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if session != "" && resume != "" {
				return cli.Usage("use one of them", "--session and --resume cannot be used together")
			}
			ctx := c.Context()
			store, storeURL, err := openRunStore(c, app)
			if err != nil {
				return err
			}
			defer store.Close()
			ag, err := app.NewAgent(store)
			if err != nil {
				return err
			}
			s, err := openChat(c, app, ag, store, session, resume)
			if err != nil {
				return err
			}
			cl, err := claimSession(ctx, app, s, store, storeURL, force, "cairn chat --session "+s.ID()+" --force")
			if err != nil {
				return err
			}
			defer releaseClaim(ctx, app, cl)
			return chatLoop(ctx, app, s)
		},
	}
	c.Flags().StringVar(&session, "session", "", "continue (or start) the session with this ID")
	c.Flags().StringVar(&resume, "resume", "", "resume a session (default: the most recently updated)")
	c.Flags().Lookup("resume").NoOptDefVal = latest
	c.Flags().BoolVar(&force, "force", false, "take the session over from the process that runs it (its writes are refused from then on)")
	return c
}

func openChat(c *cobra.Command, app *cli.App, ag *agent.Agent, store cairn.Store, session, resume string) (*agent.Session, error) {
	ctx := c.Context()
	switch {
	case resume == latest:
		id, err := mostRecent(c, store)
		if err != nil {
			return nil, err
		}
		return resumeChat(c, app, ag, id)
	case resume != "":
		loc, err := app.Locate(ctx, resume, cli.LocateOptions{Exact: true, Command: "cairn chat --resume"})
		if err != nil {
			return nil, err
		}
		loc.Store.Close()
		return resumeChat(c, app, ag, loc.ID)
	case session != "":
		if err := cairn.ValidateID(session); err != nil {
			return nil, cli.Fail(err, "session IDs are 1-128 characters of A-Z a-z 0-9 _ -")
		}
		s, err := ag.Open(ctx, session)
		if err != nil {
			return nil, cli.StoreFail(session, err)
		}
		return s, nil
	}
	s, err := ag.Start(ctx)
	if err != nil {
		return nil, cli.StoreFail("", err)
	}
	return s, nil
}

func resumeChat(c *cobra.Command, app *cli.App, ag *agent.Agent, id string) (*agent.Session, error) {
	s, err := ag.Resume(c.Context(), id)
	if err != nil {
		return nil, cli.StoreFail(id, err)
	}
	n := 0
	for _, m := range s.State().Messages {
		if m.Role == cairn.RoleUser || m.Role == cairn.RoleAssistant && m.Content != "" {
			n++
		}
	}
	app.Notef("resuming %s: %d message(s) so far", id, n)
	return s, nil
}

func chatLoop(ctx context.Context, app *cli.App, s *agent.Session) error {
	interactive := cli.IsTerminal(app.Stdin)
	app.Notef("session %s — Ctrl+C or Ctrl+D to stop; `cairn chat --resume` to go on later", s.ID())
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(app.Stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		if interactive {
			fmt.Fprint(app.Stderr, "> ")
		}
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			fmt.Fprintln(app.Stderr)
			return cli.Interrupted(fmt.Errorf("stopped; session %s is saved", s.ID()), "go on with `cairn chat --resume`")
		case line, ok = <-lines:
		}
		if !ok {
			if interactive {
				fmt.Fprintln(app.Stderr)
			}
			return nil
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if line == "/exit" || line == "/quit" {
			return nil
		}
		opts := []agent.RunOption{}
		if s.Memory().Len() > 0 {
			opts = append(opts, agent.Continue())
		}
		out := app.NewRunOutput()
		res, err := s.Run(ctx, line, append(opts, out.Options()...)...)
		out.Finish(res)
		app.ReportWarnings(res)
		if err := cli.RunError(s.ID(), res, err); err != nil {
			if ctx.Err() != nil {
				return cli.Interrupted(fmt.Errorf("interrupted; session %s is saved", s.ID()), "go on with `cairn chat --resume`")
			}
			return err
		}
	}
}
