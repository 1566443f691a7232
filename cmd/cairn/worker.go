package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/worker"
)

func newWorkerCmd(app *cli.App) *cobra.Command {
	var (
		concurrency int
		leaseTTL    time.Duration
		poll        time.Duration
		queue       string
		name        string
	)
	c := &cobra.Command{
		Use:   "worker [--concurrency N]",
		Short: "Run queued and interrupted sessions of a shared store",
		Long: `Run queued runs (cairn run --detach) and interrupted runs of the store's
queue, oldest first, N at a time. Each session is run under a lease that is
renewed while it runs, so any number of workers on any number of machines
can share one store: a session runs in one place at a time, and a worker
that dies (or stalls past its lease) has its sessions finished by others.

SIGTERM (or Ctrl+C) stops claiming, interrupts the runs under way (each is
saved as run.interrupted, for another worker to finish) and releases their
leases. The store must have leases: postgres, redis, mongodb, sqlite, file
or memory.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if concurrency < 1 {
				return cli.Usage("give --concurrency 1 or more", "--concurrency %d is too small", concurrency)
			}
			if leaseTTL < 100*time.Millisecond {
				return cli.Usage("give --lease 100ms or more, such as --lease 15s", "--lease %s is too short", leaseTTL)
			}
			store, storeURL, err := app.OpenStore(c.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			if _, ok := store.(cairn.Leaser); !ok {
				return cli.Fail(fmt.Errorf("the store %s has no leases", text.RedactURL(storeURL)),
					"run workers on a store with leases: postgres, redis, mongodb, sqlite or file (see docs/SCALING.md)")
			}
			ag, err := traced(app.NewAgent)(store)
			if err != nil {
				return err
			}
			return worker.Run(c.Context(), worker.Options{
				Agent:       ag,
				Queue:       queue,
				Name:        name,
				Concurrency: concurrency,
				LeaseTTL:    leaseTTL,
				Poll:        poll,
				Logger:      app.ProcessLogger(slog.LevelInfo),
			})
		},
	}
	c.Flags().IntVarP(&concurrency, "concurrency", "n", 1, "sessions run at once")
	c.Flags().DurationVar(&leaseTTL, "lease", agent.DefaultClaimTTL, "how long a session's lease lasts unless renewed (renewed every third of it)")
	c.Flags().DurationVar(&poll, "poll", time.Second, "how long to wait when no session is waiting")
	c.Flags().StringVar(&queue, "queue", worker.DefaultQueue, "the queue to take sessions from")
	c.Flags().StringVar(&name, "name", "", "the worker's name in leases and logs (default host:pid)")
	return c
}
