package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/sessions"
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

// defaultListPage is how many sessions list shows when neither --limit
// nor --all is given.
const defaultListPage = 50

func newListCmd(app *cli.App) *cobra.Command {
	var (
		status []string
		labels []string
		limit  int
		all    bool
		cursor string
	)
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List saved sessions, most recently updated first",
		Long: `List saved sessions, most recently updated first, a page at a time: the
first 50 unless --limit says how many; --all lists every one. When there are
more, a last line on stderr gives the command for the next page (--cursor);
under --json, stdout stays one JSON array and the next page's cursor is a
JSON record on stderr with a "next_cursor" field:

  cairn sessions list --json 2>next.json     # the array on stdout
  jq -r 'select(.next_cursor) | .next_cursor' next.json

A generated ID is shown in a short form, as git shows commits: the shortest
start of it (8 characters or more) that no other session's ID shares, which
show and export take as the ID; --json gives whole IDs.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			opts := cairn.ListOptions{Labels: map[string]string{}, Cursor: cursor}
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
			switch {
			case c.Flags().Changed("limit") && limit < 1:
				return cli.Usage("give a page size of 1 or more, or --all for every session", "--limit %d is not a page size", limit)
			case all && c.Flags().Changed("limit"):
				return cli.Usage("give one of them", "--all and --limit cannot go together")
			case all && cursor != "":
				return cli.Usage("--all starts at the first session; drop --cursor to list every one", "--all and --cursor cannot go together")
			}
			if cursor != "" {
				if _, err := driver.ParseCursor(cursor); err != nil {
					return cli.Usage("give the cursor a previous `cairn sessions list` printed, unchanged", "--cursor %q is not a cursor of sessions list", cursor)
				}
			}
			if !c.Flags().Changed("limit") {
				limit = defaultListPage
			}
			store, _, err := app.OpenReadStore(c.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			infos := []cairn.SessionInfo{}
			next := ""
			if all {
				err = cli.EachSession(c.Context(), store, opts, func(i cairn.SessionInfo) bool {
					infos = append(infos, i)
					return true
				})
			} else {
				infos, next, err = listPage(c.Context(), store, opts, limit)
			}
			if err != nil {
				return err
			}
			for i := range infos {
				if _, ok := sessions.Incomplete(infos[i]); ok {
					infos[i].Status = sessions.StatusIncomplete // an import still being written, or killed
				} else if infos[i].Status == cairn.StatusNew && infos[i].Labels[worker.QueueLabel] != "" {
					infos[i].Status = statusQueued // waiting for a worker
					if infos[i].FirstMessage == "" {
						infos[i].FirstMessage = queuedPrompt(c.Context(), store, infos[i].ID)
					}
				}
			}
			holders, err := cli.Holders(c.Context(), store, infos)
			if err != nil {
				return err
			}
			if app.Flags.JSON {
				if err := cli.WriteJSON(app.Stdout, cli.WithHolders(infos, holders)); err != nil {
					return err
				}
				if next != "" {
					app.Logger().Info("more sessions: give --cursor for the next page", "next_cursor", next)
				}
				return nil
			}
			if len(infos) == 0 {
				switch {
				case cursor != "":
					app.Notef("no more sessions")
				case len(status) > 0 || len(labels) > 0:
					app.Notef("no session matches; `cairn sessions list` shows them all")
				default:
					app.Notef("no sessions saved yet; start one with `cairn chat` or `cairn run \"…\"`")
				}
				return nil
			}
			short, err := cli.StoreShortIDs(c.Context(), store, infos)
			if err != nil {
				return err
			}
			if err := cli.InfoTableHolders(app.Stdout, infos, short, holders, time.Now()); err != nil {
				return err
			}
			if next != "" {
				app.Notef("more sessions: `cairn sessions list%s --cursor %s` shows the next %d (--all: every one)", listFlags(status, labels, limit), next, limit)
			}
			return nil
		},
	}
	c.Flags().StringSliceVar(&status, "status", nil, "only sessions with this status (queued, new, running, interrupted, awaiting_approval, completed, failed, max_steps, damaged); an import not yet finished is listed as incomplete")
	c.Flags().StringSliceVar(&labels, "label", nil, "only sessions with this label (KEY=VALUE)")
	c.Flags().IntVar(&limit, "limit", defaultListPage, "sessions per page")
	c.Flags().BoolVar(&all, "all", false, "every session, not a page")
	c.Flags().StringVar(&cursor, "cursor", "", "start after the page that gave this cursor")
	return c
}

// listPage returns one page of at most limit sessions and the cursor of the
// next page, empty on the last.
func listPage(ctx context.Context, store cairn.Store, opts cairn.ListOptions, limit int) ([]cairn.SessionInfo, string, error) {
	opts.Limit = limit
	page, err := store.List(ctx, opts)
	if err != nil {
		return nil, "", cli.StoreFail("", fmt.Errorf("list sessions: %w", err))
	}
	return page.Sessions, page.Next, nil
}

// listFlags repeats the filters of a list command, for the command that
// shows its next page.
func listFlags(status, labels []string, limit int) string {
	var b strings.Builder
	for _, s := range status {
		b.WriteString(" --status " + s)
	}
	for _, l := range labels {
		b.WriteString(" --label " + cli.ShellQuote(l))
	}
	if limit != defaultListPage {
		fmt.Fprintf(&b, " --limit %d", limit)
	}
	return b.String()
}

// queuedPrompt returns the prompt of a queued run, which its session holds
// in its one event (no user message yet), cut as a first message is; ""
// when it cannot be read.
func queuedPrompt(ctx context.Context, store cairn.Store, id string) string {
	rec, err := store.Load(ctx, id, 0)
	if err != nil {
		return ""
	}
	in, _ := worker.QueuedInput(rec.Events)
	return text.Truncate(in, driver.MaxFirstMessage) // as a store keeps a first message
}
