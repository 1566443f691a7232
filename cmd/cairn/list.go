package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/internal/formats"
)

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
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			opts := cairn.ListOptions{Labels: map[string]string{}}
			for _, s := range status {
				opts.Status = append(opts.Status, cairn.Status(s))
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
			store, _, err := app.OpenStore(c.Context())
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
				}
			}
			holders := cli.Holders(c.Context(), store, infos)
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, cli.WithHolders(infos, holders))
			}
			if len(infos) == 0 {
				fmt.Fprintln(app.Stderr, "no sessions saved yet; start one with `cairn chat` or `cairn run \"…\"`")
				return nil
			}
			return cli.InfoTableHolders(app.Stdout, infos, holders, time.Now())
		},
	}
	c.Flags().StringSliceVar(&status, "status", nil, "only sessions with this status (new, running, interrupted, awaiting_approval, completed, failed, max_steps); an import not yet finished is listed as incomplete")
	c.Flags().StringSliceVar(&labels, "label", nil, "only sessions with this label (KEY=VALUE)")
	c.Flags().IntVar(&limit, "limit", 0, "at most this many sessions (0: all)")
	return c
}
