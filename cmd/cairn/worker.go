package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/cli"
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
				return cli.Fail(fmt.Errorf("the store %s has no leases", cairn.RedactURL(storeURL)),
					"run workers on a store with leases: postgres, redis, mongodb, sqlite or file (see docs/SCALING.md)")
			}
			ag, err := app.NewAgent(store)
			if err != nil {
				return err
			}
			if name == "" {
				name = agent.DefaultHolder()
			}
			sopts, err := app.StoreOptions()
			if err != nil {
				return err
			}
			w := &worker{
				app: app, store: store, agent: ag, name: name, ttl: leaseTTL, poll: poll, storeURL: storeURL,
				filter: cairn.ListOptions{
					Status: []cairn.Status{cairn.StatusNew, cairn.StatusRunning, cairn.StatusInterrupted},
					Labels: map[string]string{QueueLabel: queue},
				},
				log: app.ProcessLogger(slog.LevelInfo).With("worker", name),
				ns:  sopts.Namespace,
			}
			return w.run(c.Context(), concurrency)
		},
	}
	c.Flags().IntVarP(&concurrency, "concurrency", "n", 1, "sessions run at once")
	c.Flags().DurationVar(&leaseTTL, "lease", agent.DefaultClaimTTL, "how long a session's lease lasts unless renewed (renewed every third of it)")
	c.Flags().DurationVar(&poll, "poll", time.Second, "how long to wait when no session is waiting")
	c.Flags().StringVar(&queue, "queue", DefaultQueue, "the queue to take sessions from")
	c.Flags().StringVar(&name, "name", "", "the worker's name in leases and logs (default host:pid)")
	return c
}

// worker claims sessions and runs them.
type worker struct {
	app    *cli.App
	store  cairn.Store
	agent  *agent.Agent
	name   string
	ttl    time.Duration
	poll   time.Duration
	filter cairn.ListOptions
	log    *slog.Logger

	storeURL, ns string // for the lock files of a local store

	claimMu sync.Mutex // one claim at a time per process: no self-contention
}

// run runs n slots until ctx ends, then waits for them to interrupt
// their runs and release their leases.
func (w *worker) run(ctx context.Context, n int) error {
	w.log.Info("worker started", "concurrency", n, "lease", w.ttl)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { w.slot(ctx) })
	}
	wg.Wait()
	w.log.Info("worker stopped")
	return nil
}

// slot claims and runs one session at a time until ctx ends.
func (w *worker) slot(ctx context.Context) {
	for ctx.Err() == nil {
		begin := time.Now() // the lease is surely valid from here for its TTL, less the margin
		lease, err := w.claim(ctx)
		switch {
		case errors.Is(err, cairn.ErrNotFound):
			sleep(ctx, w.poll)
			continue
		case err != nil:
			if ctx.Err() == nil {
				w.log.Warn("claim", "err", err)
				sleep(ctx, w.poll)
			}
			continue
		}
		w.runSession(ctx, lease, begin)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// claim takes the lease of the oldest waiting session: in one step on a
// store that is a cairn.Claimer, else by listing and acquiring.
func (w *worker) claim(ctx context.Context) (cairn.Lease, error) {
	w.claimMu.Lock()
	defer w.claimMu.Unlock()
	if c, ok := w.store.(cairn.Claimer); ok {
		return c.ClaimNext(ctx, w.name, w.ttl, w.filter)
	}
	var infos []cairn.SessionInfo
	if err := cli.EachSession(ctx, w.store, w.filter, func(i cairn.SessionInfo) bool {
		infos = append(infos, i)
		return true
	}); err != nil {
		return cairn.Lease{}, err
	}
	slices.SortFunc(infos, func(a, b cairn.SessionInfo) int { return a.CreatedAt.Compare(b.CreatedAt) })
	l := w.store.(cairn.Leaser)
	for _, info := range infos {
		lease, err := l.Acquire(ctx, info.ID, w.name, w.ttl)
		if err == nil {
			return lease, nil
		}
		if !errors.Is(err, cairn.ErrLeaseHeld) && !errors.Is(err, cairn.ErrNotFound) {
			return cairn.Lease{}, err
		}
	}
	return cairn.Lease{}, cairn.ErrNotFound
}

// runSession runs (or resumes) the session of lease, acquired by a call
// that began at acquired, under that lease.
func (w *worker) runSession(ctx context.Context, lease cairn.Lease, acquired time.Time) {
	log := w.log.With("session", lease.Session, "token", lease.Token)
	log.Info("claimed")
	l := w.store.(cairn.Leaser)
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = l.Release(rctx, lease)
	}
	s, err := w.agent.Resume(ctx, lease.Session)
	if err != nil {
		log.Warn("resume", "err", err)
		release()
		return
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cl, err := s.Claim(ctx, agent.ClaimOptions{Adopt: lease, AcquiredAt: acquired, TTL: w.ttl, OnLost: func(err error) { cancel(err) },
		LockFile: lockFilePath(w.storeURL, w.ns, lease.Session)})
	if err != nil {
		log.Warn("claim", "err", err)
		release()
		return
	}
	defer cl.Release(context.WithoutCancel(ctx))
	var res *agent.Result
	switch st := s.State().Status; st {
	case cairn.StatusCompleted, cairn.StatusFailed, cairn.StatusMaxSteps, cairn.StatusAwaiting:
		// Listed while it waited, finished by another worker since.
		log.Info("skipped", "status", st)
		return
	case cairn.StatusNew:
		input, ok := queuedInput(s.Memory().Events())
		if !ok {
			log.Warn("no queued run in the session; skipped")
			return
		}
		res, err = s.Run(runCtx, input)
	default:
		res, err = s.ResumeRun(runCtx)
	}
	switch {
	case cl.Err() != nil || errors.Is(err, cairn.ErrLeaseLost):
		log.Warn("lease lost; the session is another worker's now", "err", err)
	case errors.Is(err, agent.ErrLeaseExpired):
		log.Warn("lease could not be renewed; stopped acting, the session waits for another try", "err", err)
	case res != nil && res.Unsaved > 0:
		log.Warn("the store did not answer; the session waits for another try from its last saved step",
			"unsaved", res.Unsaved, "err", res.StoreError)
	case ctx.Err() != nil:
		log.Info("interrupted for shutdown")
	case err != nil:
		log.Warn("run failed; the session waits for another try", "err", err)
	default:
		log.Info("finished", "status", res.Status, "steps", res.Steps)
	}
}
