package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/sessions"
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
			f, err := sessions.Fork(c.Context(), loc.Store, loc.ID, sessions.ForkOptions{At: at, As: as})
			if err != nil {
				return forkFailed(loc.ID, as, err)
			}
			app.NoteSnapshot(c.Context(), loc.Store, f.ID, f.Events)
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, f)
			}
			app.Printf("forked %s at seq %d as %s\n", f.From, f.At, f.ID)
			return nil
		},
	}
	c.Flags().Int64Var(&at, "at", 0, "the last seq to keep (default: the whole history)")
	c.Flags().StringVar(&as, "as", "", "the new session's ID (default: a new random ID)")
	return c
}

// forkFailed turns an error of sessions.Fork into the command's error
// with a hint.
func forkFailed(from, as string, err error) error {
	if re, ok := errors.AsType[*sessions.RangeError](err); ok {
		return cli.Usage("give a seq from 1 to the last one", "--at %d is outside the session's events 1..%d", re.At, re.Last)
	}
	if errors.Is(err, cairn.ErrExists) || errors.Is(err, cairn.ErrInvalidID) {
		return cli.WriteFailed(as, err)
	}
	return cli.StoreFail(from, err)
}
