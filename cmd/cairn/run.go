package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/cli"
)

func newRunCmd(app *cli.App) *cobra.Command {
	var (
		session string
		cont    bool
		reset   bool
		detach  bool
		force   bool
		mem     memoryFlags
	)
	c := &cobra.Command{
		Use:   `run [--session ID | --continue] [--reset] "prompt"`,
		Short: "Run the agent once on a prompt and print the answer",
		Long: `Run the agent once on a prompt and print the answer.

Without --session a new session is started. With --session ID the session
of that name continues (its memory is kept) if it exists, and is started
otherwise; --reset starts it fresh. ID is the whole ID, never a prefix.
--continue picks the most recently updated session. A session another
process is running is refused, naming that process; --force takes it over.
The prompt is the arguments joined by spaces; "-" reads it from stdin.
Ctrl+C saves the run as interrupted (exit 130); finish it with
` + "`cairn sessions resume ID`" + `, which uses the model the session was
run with.

--memory-ns NAMESPACE gives the agent long-term memory in that namespace
(users/ada, say): the tools memory_save and memory_search, and at the start
of the run the --recall memories (5 by default; 0: none) that best match
the prompt, as a system message before it (see docs/MEMORY.md). A session
it starts records the namespace (label cairn.memory), so that a resume, or
the worker of a --detach run, gives the agent that namespace by itself.

With --json, stdout holds one JSON object: {"session", "run", "status",
"output", "error", "steps", "responses", "usage", "unsaved"}; "steps" is
the session's model responses and tool results, the count ` + "`sessions list`" + `
and ` + "`sessions show`" + ` print, and "responses" this run's model responses,
the count agent.max_steps bounds. Notes go to stderr as JSON lines.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if session != "" && cont {
				return cli.Usage("use one of them", "--session and --continue cannot be used together")
			}
			if c.Flags().Changed("session") {
				if err := cairn.ValidateID(session); err != nil {
					return cli.BadID(fmt.Errorf("--session: %w", err))
				}
			}
			if err := mem.check(c); err != nil {
				return err
			}
			prompt, err := promptArg(app, a)
			if err != nil {
				return err
			}
			ctx := c.Context()
			if detach {
				return detachRun(c, app, session, cont || reset, prompt, mem.labels())
			}
			store, ag, err := openRunAgent(c, app)
			if err != nil {
				return err
			}
			defer store.Close()
			var s *agent.Session
			continuing := false
			switch {
			case cont:
				id, err := mostRecent(c, store)
				if err != nil {
					return err
				}
				s, err = ag.Resume(ctx, id)
				if err != nil {
					return cli.StoreFail(id, err)
				}
				continuing = true
			case session != "":
				s, err = ag.Open(ctx, session, agent.WithLabels(mem.labels()))
				if err != nil {
					return cli.StoreFail(session, err)
				}
				continuing = s.Memory().LastSeq() > 0
			default:
				s, err = ag.Start(ctx, agent.WithLabels(mem.labels()))
				if err != nil {
					return cli.StoreFail("", err)
				}
			}
			if continuing {
				if err := app.UseRecorded(ag, s.State()); err != nil {
					return err
				}
				mem.fromSession(app, s)
			}
			cl, err := claimSession(ctx, app, s, force, "cairn run --session "+s.ID()+" --force …")
			if err != nil {
				return err
			}
			defer releaseClaim(ctx, app, cl)
			var opts []agent.RunOption
			if continuing && !reset {
				opts = append(opts, agent.Continue())
			}
			var st *cairn.State
			if continuing && !reset {
				st = s.State()
			}
			defer mem.Close()
			if err := mem.attach(ctx, app, ag, st, "cairn run --session "+s.ID()); err != nil {
				return err
			}
			background, err := mem.background(ctx, prompt)
			if err != nil {
				return err
			}
			opts = append(opts, background...)
			out := app.NewRunOutput()
			app.Notef("session %s", s.ID())
			res, err := s.Run(ctx, prompt, append(opts, out.Options()...)...)
			out.Finish(res)
			app.ReportWarnings(res)
			if app.Flags.JSON && res != nil {
				if jerr := cli.WriteJSON(app.Stdout, runJSON(s, res)); jerr != nil {
					return jerr
				}
			}
			return cli.RunError(s.ID(), res, err)
		},
	}
	c.Flags().StringVar(&session, "session", "", "continue (or start) the session with this ID")
	c.Flags().BoolVar(&cont, "continue", false, "continue the most recently updated session")
	c.Flags().BoolVar(&reset, "reset", false, "start the session's memory fresh")
	c.Flags().BoolVar(&detach, "detach", false, "queue the run for `cairn worker` and print the session ID at once")
	mem.add(c)
	c.Flags().BoolVar(&force, "force", false, "take the session over from the process that runs it (its writes are refused from then on)")
	return c
}

// promptArg returns the prompt of the arguments: their words joined, or
// stdin for "-".
func promptArg(app *cli.App, a []string) (string, error) {
	if len(a) == 1 && a[0] == "-" {
		data, err := io.ReadAll(io.LimitReader(app.Stdin, maxPrompt+1))
		if err != nil {
			return "", cli.Fail(fmt.Errorf("read the prompt from stdin: %w", err), "pipe the prompt in, or give it as an argument")
		}
		if len(data) > maxPrompt {
			return "", cli.Usage("give a shorter prompt", "the prompt on stdin is longer than %d bytes", maxPrompt)
		}
		if p := strings.TrimSpace(string(data)); p != "" {
			return p, nil
		}
		return "", cli.Usage("pipe the prompt in: echo \"…\" | cairn run -", "the prompt on stdin is empty")
	}
	prompt := strings.TrimSpace(strings.Join(a, " "))
	if prompt == "" {
		return "", cli.Usage("give the prompt as an argument, or - to read it from stdin", "the prompt is empty")
	}
	return prompt, nil
}

// maxPrompt bounds a prompt read from stdin.
const maxPrompt = 1 << 20

// openRunStore opens the store runs write to, saying so when persistence
// is off.
func openRunStore(c *cobra.Command, app *cli.App) (cairn.Store, string, error) {
	cfg, err := app.Config()
	if err != nil {
		return nil, "", err
	}
	if !cfg.Enabled() {
		app.Notef("persistence is off (persistence.enabled = false): this session is volatile and will not be saved")
	}
	return app.OpenStore(c.Context())
}

// openRunAgent opens the store runs write to (openRunStore) and builds the
// configured agent on it. The caller closes the store.
func openRunAgent(c *cobra.Command, app *cli.App) (cairn.Store, *agent.Agent, error) {
	store, _, err := openRunStore(c, app)
	if err != nil {
		return nil, nil, err
	}
	ag, err := traced(app.NewAgent)(store)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, ag, nil
}

func mostRecent(c *cobra.Command, store cairn.Store) (string, error) {
	return mostRecentIn(c.Context(), store)
}

// runResult is what `cairn --json run` and `sessions resume` print. Steps
// means what it means in `sessions list` and `sessions show`: the session's
// model responses and tool results over its life. Responses is the model
// responses of this run, the count agent.max_steps bounds.
type runResult struct {
	Session   string           `json:"session"`
	Run       string           `json:"run"`
	Status    cairn.Status     `json:"status"`
	Output    string           `json:"output"`
	Error     *cairn.ErrorInfo `json:"error,omitempty"`
	Steps     int              `json:"steps"`
	Responses int              `json:"responses"`
	Usage     cairn.Usage      `json:"usage"`
	Unsaved   int              `json:"unsaved"`
}

func runJSON(s *agent.Session, res *agent.Result) runResult {
	return runResult{s.ID(), res.RunID, res.Status, res.Output, res.Error, s.State().Steps, res.Steps, res.Usage, res.Unsaved}
}
