package main

import (
	"fmt"
	"maps"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
)

func newForkCmd(app *cli.App) *cobra.Command {
	var (
		at int64
		as string
	)
	c := &cobra.Command{
		Use:   "fork ID --at SEQ [--as NEWID]",
		Short: "Copy a session's history up to a seq into a new session",
		Long: `Copy a session's history up to a seq into a new session, labelled
forked_from=ID. ID is the whole ID, never a prefix.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if as != "" {
				if err := cairn.ValidateID(as); err != nil {
					return cli.BadID(fmt.Errorf("--as: %w", err))
				}
			}
			loc, err := app.Locate(c.Context(), a[0], cli.LocateOptions{Exact: true, Command: "cairn sessions fork"})
			if err != nil {
				return err
			}
			defer loc.Store.Close()
			rec, err := loc.Store.Load(c.Context(), loc.ID, 0)
			if err != nil {
				return cli.StoreFail(loc.ID, fmt.Errorf("load %s: %w", loc.ID, err))
			}
			if at == 0 {
				at = rec.Info.LastSeq
			}
			if at < 1 || at > rec.Info.LastSeq {
				return cli.Usage("give a seq from 1 to the last one", "--at %d is outside the session's events 1..%d", at, rec.Info.LastSeq)
			}
			if as == "" {
				as = cairn.NewID()
			}
			labels := maps.Clone(rec.Info.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels["forked_from"] = loc.ID
			if err := cli.WriteSession(c.Context(), loc.Store, cairn.SessionMeta{ID: as, Labels: labels}, rec.Events[:at]); err != nil {
				return err
			}
			app.NoteSnapshot(c.Context(), loc.Store, as, nil)
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, map[string]any{"id": as, "from": loc.ID, "at": at})
			}
			app.Printf("forked %s at seq %d as %s\n", loc.ID, at, as)
			return nil
		},
	}
	c.Flags().Int64Var(&at, "at", 0, "the last seq to keep (default: the whole history)")
	c.Flags().StringVar(&as, "as", "", "the new session's ID (default: a new random ID)")
	return c
}
