package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/longterm"
)

func newDeleteCmd(app *cli.App) *cobra.Command {
	var yes, memories bool
	c := &cobra.Command{
		Use:     "delete ID...",
		Aliases: []string{"rm"},
		Short:   "Erase sessions and everything derived from them",
		Long: `Erase sessions: their events, their summary and every index entry.

Each ID is a whole ID, never a prefix, and every one must exist: otherwise
nothing is erased. At a terminal cairn asks for confirmation first; --yes
skips the question, and without a terminal (a script) --yes is required.

--memories erases too the long-term memory items that the sessions' agents
saved (those whose source is one of the sessions), in every namespace of
the store.`,
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
			var mem longterm.Store
			if memories {
				m, _, err := app.OpenMemory(c.Context())
				if err != nil {
					return err
				}
				defer m.Close()
				mem = m
			}
			deleted := []string{}
			erased := map[string]int{}
			for _, loc := range locs {
				n, err := deleteOne(app, c, loc, yes, mem)
				if errors.Is(err, errDeclined) {
					continue
				}
				if err != nil {
					return err
				}
				deleted = append(deleted, loc.ID)
				erased[loc.ID] = n
			}
			if app.Flags.JSON {
				out := map[string]any{"deleted": deleted}
				if mem != nil {
					out["memories_deleted"] = erased
				}
				return cli.WriteJSON(app.Stdout, out)
			}
			for _, id := range deleted {
				if mem != nil {
					items := "memory items"
					if erased[id] == 1 {
						items = "memory item"
					}
					app.Printf("deleted %s and the %d %s it saved\n", id, erased[id], items)
					continue
				}
				app.Printf("deleted %s\n", id)
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	c.Flags().BoolVar(&memories, "memories", false, "erase too the long-term memory items the sessions' agents saved")
	return c
}

var errDeclined = errors.New("declined")

// deleteOne erases a session once confirmed and, with mem, the memory
// items it produced first (so that a failure there leaves the session to
// delete again), returning how many of those it erased.
func deleteOne(app *cli.App, c *cobra.Command, loc *cli.Located, yes bool, mem longterm.Store) (int, error) {
	if !yes {
		fmt.Fprintf(app.Stderr, "Erase session %s for good? [y/N] ", loc.ID)
		answer, _ := bufio.NewReader(app.Stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(app.Stderr, "kept", loc.ID)
			return 0, errDeclined
		}
	}
	n := 0
	if mem != nil {
		var err error
		if n, err = longterm.DeleteBySession(c.Context(), mem, loc.ID); err != nil {
			return n, cli.MemoryFail("delete the memories of session "+loc.ID+" (the session is kept)", err)
		}
	}
	if err := loc.Store.Delete(c.Context(), loc.ID); err != nil {
		if errors.Is(err, cairn.ErrNotFound) {
			return n, cli.Fail(fmt.Errorf("delete %s: %w", loc.ID, err), "it was deleted or expired meanwhile")
		}
		return n, cli.StoreFail(loc.ID, fmt.Errorf("delete %s: %w", loc.ID, err))
	}
	return n, nil
}
