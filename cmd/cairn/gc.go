package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
)

func newGCCmd(app *cli.App) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Purge expired sessions now",
		Long: `Purge sessions whose TTL has passed (persistence.ttl_seconds). Expired
sessions are invisible at once; gc also removes their data now rather than
when the backend gets to it.`,
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
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, map[string]any{"purged": n, "store": cairn.RedactURL(u)})
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
