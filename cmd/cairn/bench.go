package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/internal/bench"
	"github.com/cairnhq/cairn/internal/cli"
)

func newBenchCmd(app *cli.App) *cobra.Command {
	var (
		stores []string
		quick  bool
		dir    string
	)
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure the stores: append latency, resume, size, concurrency, against their floors",
		Long: `Measure each store against the cheapest durable write of its kind, in one run:
Append p50 and p99 at history lengths 10 and 10,000 beside the backend's bare
single write; resume (load and fold) of 1,000 and 20,000 events beside reading
the same bytes back and decoding them plainly; stored bytes per event; 8
sessions appending at once against 1; and, over 1,000 steps, cairn against
rewriting the whole memory after every step.

With no --store it measures memory, and file and sqlite stores in a temporary
folder, and PostgreSQL, Redis and MongoDB from CAIRN_TEST_POSTGRES,
CAIRN_TEST_REDIS and CAIRN_TEST_MONGODB, or at their default local addresses
when reachable. Each server store works in a namespace of its own, removed at
the end. docs/PERFORMANCE.md describes the method.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			opts := bench.Options{Stores: stores, Quick: quick, Dir: dir}
			if cli.IsTerminal(app.Stderr) {
				opts.Progress = func(step string) { fmt.Fprintf(app.Stderr, "\r\033[Kbench: %s…", step) }
			}
			rep, err := bench.Run(c.Context(), opts)
			if opts.Progress != nil {
				fmt.Fprint(app.Stderr, "\r\033[K")
			}
			if err != nil {
				return cli.Fail(fmt.Errorf("bench: %w", err), "check the stores with `cairn doctor --store URL`")
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, rep)
			}
			return bench.WriteTable(app.Stdout, rep)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&stores, "store", nil, "store URL to measure (repeat for several; default: every backend reachable)")
	f.BoolVar(&quick, "quick", false, "fewer samples: a smoke check in well under two minutes")
	f.StringVar(&dir, "dir", "", "folder for the file and sqlite stores (default: a temporary one, removed afterwards)")
	return c
}
