package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/worker"
)

func newWorkerCmd(app *cli.App) *cobra.Command {
	var (
		concurrency int
		leaseTTL    time.Duration
		poll        time.Duration
		queue       string
		name        string
		recall      int
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
or memory.

A session queued with a long-term memory namespace (cairn run --detach
--memory-ns users/ada) is run with that namespace's tools, memory_save and
memory_search, and a new run starts with the --recall memories (5 by
default; 0: none) that best match its prompt, as cairn run does. A session
that cannot be started (its memory store is unreachable, say) is tried
again once its lease has expired; the sessions behind it run meanwhile.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if recall < 0 || recall > 50 {
				return cli.Usage("give --recall between 0 and 50", "--recall %d is not a number of memories", recall)
			}
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
			mem := &workerMemory{app: app, store: store, recall: recall}
			defer mem.Close()
			return worker.Run(c.Context(), worker.Options{
				Agent:       ag,
				Prepare:     mem.prepare(ag),
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
	c.Flags().IntVar(&recall, "recall", 5, "for a session queued with --memory-ns: put this many memories that match its prompt into the context at the start")
	return c
}

// workerMemory gives the sessions a worker runs the long-term memory
// their label names (builtin.MemoryLabel): the store is opened by the
// first such session and shared.
type workerMemory struct {
	app    *cli.App
	store  cairn.Store // the sessions' store, for a queued run's input
	recall int

	mu  sync.Mutex
	mem longterm.Store
}

// prepare returns the worker.Options.Prepare of agents based on ag.
func (w *workerMemory) prepare(ag *agent.Agent) func(context.Context, cairn.SessionInfo) (*agent.Agent, []agent.RunOption, error) {
	return func(ctx context.Context, info cairn.SessionInfo) (*agent.Agent, []agent.RunOption, error) {
		ns := info.Labels[builtin.MemoryLabel]
		if ns == "" {
			return nil, nil, nil
		}
		if err := longterm.ValidateNamespace(ns); err != nil {
			return nil, nil, fmt.Errorf("the session's %s label %q: %w", builtin.MemoryLabel, ns, err)
		}
		mem, err := w.open(ctx)
		if err != nil {
			return nil, nil, err
		}
		tools, err := memoryTools(w.app, mem, ns)
		if err != nil {
			return nil, nil, err
		}
		var opts []agent.RunOption
		if info.Status == cairn.StatusNew && w.recall > 0 {
			rec, err := w.store.Load(ctx, info.ID, 1)
			if err != nil {
				return nil, nil, err
			}
			if input, ok := worker.QueuedInput(rec.Events); ok {
				background, err := builtin.RecallMemories(ctx, mem, ns, input, w.recall)
				if err != nil {
					return nil, nil, err
				}
				if background != "" {
					opts = append(opts, agent.Background(background))
				}
			}
		}
		return ag.WithTools(tools...), opts, nil
	}
}

// open opens the long-term memory store, once.
func (w *workerMemory) open(ctx context.Context) (longterm.Store, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mem == nil {
		mem, _, err := w.app.OpenMemory(ctx)
		if err != nil {
			return nil, err
		}
		w.mem = mem
	}
	return w.mem, nil
}

// Close closes the long-term memory store, if it was opened.
func (w *workerMemory) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mem != nil {
		w.mem.Close()
	}
}
