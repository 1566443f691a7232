package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/sessions"
)

func newCopyCmd(app *cli.App) *cobra.Command {
	var from, to string
	c := &cobra.Command{
		Use:   "copy [--from URL] --to URL [ID...]",
		Short: "Copy sessions between stores, verifying each copy",
		Long: `Copy sessions (all of them, or the IDs given) from one store to another,
in the configured namespace. Each copy is verified: it must fold to the same
snapshot as the original. An interrupted copy is completed when run again;
sessions already copied are skipped; a session that differs at the
destination is reported and left alone. --from defaults to the configured
store (--store, CAIRN_STORE or cairn.toml); either may be a plain path, as
--store may.`,
		RunE: func(c *cobra.Command, ids []string) error {
			if to == "" {
				return cli.Usage("give the destination: --to URL (or a path)", "copy needs --to")
			}
			ctx := c.Context()
			var src cairn.Store
			var err error
			if from == "" {
				src, from, err = app.OpenReadStore(ctx) // the configured store: --store, CAIRN_STORE, cairn.toml
			} else if from, err = cli.StoreArg(from); err == nil {
				src, err = app.OpenURL(ctx, from)
			}
			if err != nil {
				return err
			}
			if to, err = cli.StoreArg(to); err != nil {
				return err
			}
			defer src.Close()
			dst, err := app.OpenURL(ctx, to)
			if err != nil {
				return err
			}
			defer dst.Close()
			if len(ids) == 0 {
				err := cli.EachSession(ctx, src, cairn.ListOptions{}, func(i cairn.SessionInfo) bool {
					ids = append(ids, i.ID)
					return true
				})
				if err != nil {
					return err
				}
			}
			type failure struct {
				ID    string `json:"id"`
				Error string `json:"error"`
			}
			result := struct {
				Copied  []string  `json:"copied"`
				Resumed []string  `json:"resumed"`
				Skipped []string  `json:"skipped"`
				Failed  []failure `json:"failed"`
			}{[]string{}, []string{}, []string{}, []failure{}}
			policy := app.SnapshotPolicy()
			bar := cli.NewProgress(app.Stderr, len(ids), "copying")
			for i, id := range ids {
				if ctx.Err() != nil {
					break
				}
				bar.Set(i, id)
				out, events, err := sessions.Copy(ctx, src, dst, id)
				if err == nil && out != sessions.Skipped {
					if _, serr := cli.WriteSnapshot(ctx, dst, id, events, policy); serr != nil {
						bar.Done() // clears the bar; the next Set draws it again
						app.Notef("note: %v; the copy is whole, and opening it replays its events until the agent writes a snapshot", serr)
					}
				}
				switch {
				case err != nil:
					result.Failed = append(result.Failed, failure{id, err.Error()})
				case out == sessions.Copied:
					result.Copied = append(result.Copied, id)
				case out == sessions.Resumed:
					result.Resumed = append(result.Resumed, id)
				default:
					result.Skipped = append(result.Skipped, id)
				}
			}
			bar.Done()
			if app.Flags.JSON {
				if err := cli.WriteJSON(app.Stdout, result); err != nil {
					return err
				}
			} else {
				app.Printf("copied %d, completed %d interrupted, skipped %d already there, failed %d\n",
					len(result.Copied), len(result.Resumed), len(result.Skipped), len(result.Failed))
				for _, f := range result.Failed {
					app.Printf("  %s: %s\n", f.ID, f.Error)
				}
			}
			if ctx.Err() != nil {
				return cli.Interrupted(ctx.Err(), "run the same command again to finish the copy")
			}
			if len(result.Failed) > 0 {
				return cli.Fail(fmt.Errorf("%d session(s) were not copied", len(result.Failed)), "see the reasons above; nothing at the destination was overwritten")
			}
			return nil
		},
	}
	c.Flags().StringVar(&from, "from", "", "source store URL (default: the configured store)")
	c.Flags().StringVar(&to, "to", "", "destination store URL")
	return c
}
