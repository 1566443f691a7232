package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/cli"
)

func newResumeCmd(app *cli.App) *cobra.Command {
	var approve, deny []string
	var note string
	var force bool
	var mem memoryFlags
	c := &cobra.Command{
		Use:   `resume ID ["prompt"]`,
		Short: "Finish an interrupted run, or continue a session with a new prompt",
		Long: `Restore a session (its history, model and agent name) and go on, with
the model its last run recorded unless --model (or CAIRN_MODEL) names
another.

Without a prompt, an interrupted, crashed or approval-waiting run is
finished: nothing that completed is done again. With a prompt, the session
continues with it as the next turn. ID is the whole ID: a command that
changes a session never takes a prefix. The project's store is searched
first, then the user-global store; a store named with --store,
CAIRN_STORE or a config file given with --config is the only one
searched.

--memory-ns NAMESPACE gives the agent long-term memory in that namespace,
as ` + "`cairn run`" + ` does; a run that waits on a call of memory_save or
memory_search needs it to finish. With a prompt, --recall memories that
match it are put in front of it.`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: func(c *cobra.Command, a []string) error {
			if err := mem.check(c); err != nil {
				return err
			}
			ctx := c.Context()
			loc, err := app.Locate(ctx, a[0], cli.LocateOptions{Global: true, Exact: true, Command: "cairn sessions resume"})
			if err != nil {
				return err
			}
			defer loc.Store.Close()
			ag, err := traced(app.NewAgent)(loc.Store)
			if err != nil {
				return err
			}
			s, err := ag.Resume(ctx, loc.ID)
			if err != nil {
				return cli.StoreFail(loc.ID, err)
			}
			if err := app.UseRecorded(ag, s.State()); err != nil {
				return err
			}
			mem.fromSession(app, s)
			defer mem.Close()
			if err := mem.attach(ctx, app, ag, s.State(), "cairn sessions resume "+s.ID()); err != nil {
				return err
			}
			cl, err := claimSession(ctx, app, s, force, "cairn sessions resume "+s.ID()+" --force")
			if err != nil {
				return err
			}
			defer releaseClaim(ctx, app, cl)
			if err := decide(c, s, approve, true, note); err != nil {
				return err
			}
			if err := decide(c, s, deny, false, note); err != nil {
				return err
			}
			out := app.NewRunOutput()
			app.Notef("session %s", s.ID())
			var res *agent.Result
			if len(a) == 2 && strings.TrimSpace(a[1]) != "" {
				background, berr := mem.background(ctx, a[1])
				if berr != nil {
					return berr
				}
				opts := append([]agent.RunOption{agent.Continue()}, background...)
				res, err = s.Run(ctx, a[1], append(opts, out.Options()...)...)
			} else {
				switch s.State().Status {
				case cairn.StatusRunning, cairn.StatusInterrupted, cairn.StatusAwaiting:
				default:
					return cli.Fail(fmt.Errorf("session %s has no unfinished run (status %s)", s.ID(), s.State().Status),
						"give a prompt to continue it: `cairn sessions resume "+s.ID()+" \"…\"`")
				}
				res, err = s.ResumeRun(ctx, out.Options()...)
			}
			out.Finish(res)
			app.ReportWarnings(res)
			if app.Flags.JSON && res != nil { // one JSON object on stdout
				if jerr := cli.WriteJSON(app.Stdout, runJSON(s, res)); jerr != nil {
					return jerr
				}
			}
			return cli.RunError(s.ID(), res, err)
		},
	}
	c.Flags().StringSliceVar(&approve, "approve", nil, "approve a tool call waiting for a person (CALL_ID, or all)")
	c.Flags().StringSliceVar(&deny, "deny", nil, "deny a tool call waiting for a person (CALL_ID, or all)")
	c.Flags().StringVar(&note, "note", "", "a note recorded with the decisions")
	c.Flags().BoolVar(&force, "force", false, "take the session over from the process that runs it (its writes are refused from then on)")
	mem.add(c)
	return c
}

// decide records approval decisions for the calls named (or all awaiting).
func decide(c *cobra.Command, s *agent.Session, ids []string, approved bool, note string) error {
	for _, id := range ids {
		targets := []string{id}
		if id == "all" {
			targets = nil
			for _, p := range s.State().Pending {
				if _, done := s.State().Approvals[p.ID]; !done {
					targets = append(targets, p.ID)
				}
			}
		}
		for _, t := range targets {
			if err := s.Approve(c.Context(), t, approved, note); err != nil {
				if errors.Is(err, cairn.ErrNotFound) {
					return cli.Fail(err, "`cairn sessions show "+s.ID()+"` lists the pending calls")
				}
				return cli.Fail(err, "`cairn sessions show "+s.ID()+"` lists the pending calls")
			}
		}
	}
	return nil
}
