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
		Long: `Erase sessions: their events, their summary and every index entry.

Each ID is a whole ID, never a prefix, and every one must exist: otherwise
nothing is erased. At a terminal cairn asks for confirmation first; --yes
skips the question, and without a terminal (a script) --yes is required.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if !yes && !cli.IsTerminal(app.Stdin) {
				return cli.Usage("add --yes to erase without a question (scripts), or run it at a terminal",
					"delete %s: not erasing without confirmation, and there is no terminal to ask on", strings.Join(a, " "))
			}
			var locs []*cli.Located
			defer func() {
				for _, loc := range locs {
					loc.Store.Close()
				}
			}()
			for _, ref := range a {
				loc, err := app.Locate(c.Context(), ref, cli.LocateOptions{Exact: true, Command: "cairn sessions delete"})
				if err != nil {
					if len(a) > 1 {
						return cli.Fail(fmt.Errorf("%w; nothing was erased", err), cli.HintOf(err))
					}
					return err
				}
				locs = append(locs, loc)
			}
			deleted := []string{}
			for _, loc := range locs {
				err := deleteOne(app, c, loc, yes)
				if errors.Is(err, errDeclined) {
					continue
				}
				if err != nil {
					return err
				}
				deleted = append(deleted, loc.ID)
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, map[string]any{"deleted": deleted})
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
	if !yes {
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
		return cli.StoreFail(loc.ID, fmt.Errorf("delete %s: %w", loc.ID, err))
	}
	return nil
}
