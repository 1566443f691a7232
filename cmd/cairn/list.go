package main

import (
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/internal/formats"
	"github.com/cairnhq/cairn/worker"
)

// statusQueued is the status list shows for a run queued for a worker
// (cairn run --detach) that no worker has started yet.
const statusQueued = "queued"

// listStatuses are the statuses --status takes.
var listStatuses = []string{
	statusQueued, string(cairn.StatusNew), string(cairn.StatusRunning), string(cairn.StatusInterrupted), string(cairn.StatusAwaiting),
	string(cairn.StatusCompleted), string(cairn.StatusFailed), string(cairn.StatusMaxSteps), string(cairn.StatusDamaged),
}

func newListCmd(app *cli.App) *cobra.Command {
	var (
		status []string
		labels []string
		limit  int
	)
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List saved sessions, most recently updated first",
		Long: `List saved sessions, most recently updated first. A generated ID is shown
in a short form, as git shows commits: the shortest start of it (8
characters or more) that no other session's ID shares, which show and export
take as the ID; --json gives whole IDs.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			opts := cairn.ListOptions{Labels: map[string]string{}}
			queuedOnly := len(status) > 0
			for _, s := range status {
				if !slices.Contains(listStatuses, s) {
					return cli.Usage("the statuses are "+strings.Join(listStatuses, ", "), "--status %q is not a status", s)
				}
				if s == statusQueued {
					s = string(cairn.StatusNew) // a queued run is a new session with the queue's label
				} else {
					queuedOnly = false
				}
				opts.Status = append(opts.Status, cairn.Status(s))
			}
			if queuedOnly {
				opts.Labels[worker.QueueLabel] = worker.DefaultQueue
			}
			for _, l := range labels {
				k, v, ok := strings.Cut(l, "=")
				if !ok {
					return cli.Usage("labels look like --label team=search", "malformed label %q", l)
				}
				opts.Labels[k] = v
			}
			if limit < 0 {
				return cli.Usage("give a positive number", "--limit %d is negative", limit)
			}
			store, _, err := app.OpenReadStore(c.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			infos := []cairn.SessionInfo{}
			err = cli.EachSession(c.Context(), store, opts, func(i cairn.SessionInfo) bool {
				infos = append(infos, i)
				return limit == 0 || len(infos) < limit
			})
			if err != nil {
				return err
			}
			for i := range infos {
				if _, ok := formats.Incomplete(infos[i]); ok {
					infos[i].Status = formats.StatusIncomplete // an import still being written, or killed
				} else if infos[i].Status == cairn.StatusNew && infos[i].Labels[worker.QueueLabel] != "" {
					infos[i].Status = statusQueued // waiting for a worker
				}
			}
			holders := cli.Holders(c.Context(), store, infos)
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, cli.WithHolders(infos, holders))
			}
			if len(infos) == 0 {
				if len(status) > 0 || len(labels) > 0 {
					app.Notef("no session matches; `cairn sessions list` shows them all")
				} else {
					app.Notef("no sessions saved yet; start one with `cairn chat` or `cairn run \"…\"`")
				}
				return nil
			}
			var all []string // the IDs the short forms must tell apart: every session's
			if limit > 0 || len(status) > 0 || len(labels) > 0 {
				all = []string{}
				if err := cli.EachSession(c.Context(), store, cairn.ListOptions{}, func(i cairn.SessionInfo) bool {
					all = append(all, i.ID)
					return true
				}); err != nil {
					return err
				}
			}
			return cli.InfoTableHolders(app.Stdout, infos, all, holders, time.Now())
		},
	}
	c.Flags().StringSliceVar(&status, "status", nil, "only sessions with this status (queued, new, running, interrupted, awaiting_approval, completed, failed, max_steps, damaged); an import not yet finished is listed as incomplete")
	c.Flags().StringSliceVar(&labels, "label", nil, "only sessions with this label (KEY=VALUE)")
	c.Flags().IntVar(&limit, "limit", 0, "at most this many sessions (0: all)")
	return c
}
