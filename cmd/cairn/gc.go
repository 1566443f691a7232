package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/sessions"
)

func newGCCmd(app *cli.App) *cobra.Command {
	var dryRun, all bool
	c := &cobra.Command{
		Use:   "gc",
		Short: "Purge expired sessions and incomplete imports now",
		Long: `Purge sessions whose TTL has passed (persistence.ttl_seconds). Expired
sessions are invisible at once; gc also removes their data now rather than
when the backend gets to it. It removes them in small batches, so that the
sessions being written meanwhile wait at most for one batch, and on SQLite
it gives the space back to the file system.

gc also removes incomplete imports: sessions that cairn sessions import began
and did not finish (its process was killed), which sessions list shows as
incomplete. An import still running at the time stops with an error and
keeps nothing. gc finds them by a label imports carry; --all reads every
session instead, for the incomplete imports of a cairn from before that
label.

--dry-run counts what gc would remove, and removes nothing.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			store, u, err := app.OpenStore(c.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			n := 0
			sw, ok := store.(driver.Sweeper)
			switch {
			case ok && dryRun:
				if n, err = sw.CountExpired(c.Context()); err != nil {
					return cli.Fail(fmt.Errorf("count expired sessions: %w", err), "`cairn doctor` checks the store")
				}
			case ok:
				if n, err = sw.Sweep(c.Context()); err != nil {
					return cli.Fail(fmt.Errorf("purge expired sessions: %w", err), "`cairn doctor` checks the store")
				}
			}
			imports, busy, err := sessions.SweepImports(c.Context(), store, all, dryRun)
			if err != nil {
				return cli.Fail(err, "`cairn doctor` checks the store")
			}
			if app.Flags.JSON {
				out := map[string]any{"purged": n, "incomplete_imports": imports, "incomplete_imports_busy": busy, "store": text.RedactURL(u)}
				if dryRun {
					out = map[string]any{"dry_run": true, "expired": n, "incomplete_imports": imports, "store": text.RedactURL(u)}
				}
				return cli.WriteJSON(app.Stdout, out)
			}
			if dryRun {
				if ok {
					app.Printf("would purge %d expired session(s)\n", n)
				} else {
					app.Printf("this store expires sessions by itself; nothing to purge\n")
				}
				app.Printf("would remove %d incomplete import(s)\n", imports)
				return nil
			}
			if imports > 0 {
				app.Printf("removed %d incomplete import(s)\n", imports)
			}
			if busy > 0 {
				app.Printf("left %d incomplete import(s) that are being written (or whose killed writer's last append the store still counts as pending); run gc again later\n", busy)
			}
			if !ok {
				app.Printf("this store expires sessions by itself; nothing to purge\n")
				return nil
			}
			app.Printf("purged %d expired session(s)\n", n)
			return nil
		},
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "count what gc would remove; remove nothing")
	c.Flags().BoolVar(&all, "all", false, "look for incomplete imports in every session, not only those labelled as imports")
	return c
}
