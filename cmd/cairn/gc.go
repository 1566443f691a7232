package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/internal/formats"
)

func newGCCmd(app *cli.App) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Purge expired sessions and incomplete imports now",
		Long: `Purge sessions whose TTL has passed (persistence.ttl_seconds). Expired
sessions are invisible at once; gc also removes their data now rather than
when the backend gets to it.

gc also removes incomplete imports: sessions that cairn sessions import began
and did not finish (its process was killed), which sessions list shows as
incomplete. An import still running at the time stops with an error and
keeps nothing.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			store, u, err := app.OpenStore(c.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			n := 0
			sw, ok := store.(cairn.Sweeper)
			if ok {
				n, err = sw.Sweep(c.Context())
				if err != nil {
					return cli.Fail(fmt.Errorf("purge expired sessions: %w", err), "`cairn doctor` checks the store")
				}
			}
			imports, busy, err := formats.SweepImports(c.Context(), store)
			if err != nil {
				return cli.Fail(err, "`cairn doctor` checks the store")
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, map[string]any{"purged": n, "incomplete_imports": imports, "incomplete_imports_busy": busy, "store": cairn.RedactURL(u)})
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
}
