package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
)

func newDeleteCmd(app *cli.App) *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:     "delete ID...",
		Aliases: []string{"rm"},
		Short:   "Erase sessions and everything derived from them",
		Long: `Erase sessions: their events, their summary and every index entry. On a
terminal cairn asks for confirmation first; --yes skips the question.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			var deleted []string
			for _, ref := range a {
				loc, err := app.Locate(c.Context(), ref, false)
				if err != nil {
					return err
				}
				err = deleteOne(app, c, loc, yes)
				loc.Store.Close()
				if errors.Is(err, errDeclined) {
					continue
				}
				if err != nil {
					return err
				}
				deleted = append(deleted, loc.ID)
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, map[string]any{"deleted": append([]string{}, deleted...)})
			}
			for _, id := range deleted {
				app.Printf("deleted %s\n", id)
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

var errDeclined = errors.New("declined")

func deleteOne(app *cli.App, c *cobra.Command, loc *cli.Located, yes bool) error {
	if !yes && cli.IsTerminal(app.Stdin) {
		fmt.Fprintf(app.Stderr, "Erase session %s for good? [y/N] ", loc.ID)
		answer, _ := bufio.NewReader(app.Stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(app.Stderr, "kept", loc.ID)
			return errDeclined
		}
	}
	if err := loc.Store.Delete(c.Context(), loc.ID); err != nil {
		if errors.Is(err, cairn.ErrNotFound) {
			return cli.Fail(fmt.Errorf("delete %s: %w", loc.ID, err), "it was deleted or expired meanwhile")
		}
		return cli.Fail(fmt.Errorf("delete %s: %w", loc.ID, err), "`cairn doctor` checks the store")
	}
	return nil
}
