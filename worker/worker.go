package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/driver"
)

// Options configure Run.
type Options struct {
	// Agent runs the sessions. Its Store is the store the worker takes
	// them from, and must have leases (cairn.Leaser). Required. One Agent
	// serves every slot.
	Agent *agent.Agent
	// Queue is the queue to take sessions from. Empty: DefaultQueue.
	Queue string
	// Name names the worker in leases (the holder) and logs. Empty:
	// agent.DefaultHolder(), the host and process ID.
	Name string
	// Concurrency is how many sessions run at once. 0: 1.
	Concurrency int
	// LeaseTTL is how long a session's lease lasts unless renewed; it is
	// renewed every third of it. 0: agent.DefaultClaimTTL.
	LeaseTTL time.Duration
	// Poll is how long a slot waits when no session is waiting, and after
	// a claim failed. 0: one second.
	Poll time.Duration
	// Prepare, when set, is called for each session the worker claims,
	// before it runs, with the session's info: it returns the agent that
	// runs it (nil: Agent), such as Agent.WithTools with tools of that
	// session's own, and the options of its run (agent.Background, say).
	// The agent's Store must be Agent's. An error leaves the session for
	// another try, logged.
	Prepare func(ctx context.Context, info cairn.SessionInfo) (*agent.Agent, []agent.RunOption, error)
	// Logger receives what the worker does: a line when it starts and
	// stops, and per session "claimed" and then one of "finished",
	// "skipped", "interrupted for shutdown" or a warning saying why the
	// session waits for another try. Every line has the attribute worker
	// (Name); a session's lines have session and token (the lease's) too.
	// Nil: slog.Default().
	Logger *slog.Logger
}

// Run takes the sessions of the store's queue, oldest first, and runs
// them, Concurrency at a time, each under its lease, until ctx ends; then
// it interrupts the runs under way (each is saved as run.interrupted, for
// another worker to finish), releases their leases and returns nil. It
// returns an error at once, running nothing, when opts are invalid or the
// store has no leases. A run stopped by a store outage, a lost lease or
// the end of ctx leaves its session for another try; a session that cannot
// be started (Prepare or its resume fails) keeps its lease until it
// expires, so that the sessions behind it run and it is tried again a
// lease's time later; a session that waits for a person's approval is
// left to them. How sessions are claimed and
// what a lease guarantees: the package documentation and docs/SCALING.md.
func Run(ctx context.Context, opts Options) error {
	w, err := newWorker(opts)
	if err != nil {
		return err
	}
	w.log.Info("worker started", "concurrency", w.concurrency, "lease", w.ttl)
	var wg sync.WaitGroup
	for range w.concurrency {
		wg.Go(func() { w.slot(ctx) })
	}
	wg.Wait()
	w.log.Info("worker stopped")
	return nil
}

// worker claims sessions and runs them.
type worker struct {
	agent       *agent.Agent
	store       cairn.Store
	leaser      cairn.Leaser
	name        string
	concurrency int
	ttl         time.Duration
	poll        time.Duration
	filter      cairn.ListOptions
	prepare     func(context.Context, cairn.SessionInfo) (*agent.Agent, []agent.RunOption, error)
	log         *slog.Logger

	claimMu sync.Mutex // one claim at a time per worker: no self-contention
}

// newWorker checks opts and fills in the defaults.
func newWorker(opts Options) (*worker, error) {
	switch {
	case opts.Agent == nil:
		return nil, errors.New("worker: no Agent")
	case opts.Agent.Store == nil:
		return nil, errors.New("worker: the Agent has no Store")
	case opts.Concurrency < 0:
		return nil, fmt.Errorf("worker: Concurrency %d is negative", opts.Concurrency)
	case opts.LeaseTTL < 0:
		return nil, fmt.Errorf("worker: LeaseTTL %s is negative", opts.LeaseTTL)
	case opts.Poll < 0:
		return nil, fmt.Errorf("worker: Poll %s is negative", opts.Poll)
	}
	l, ok := opts.Agent.Store.(cairn.Leaser)
	if !ok {
		return nil, errors.New("worker: the store has no leases (cairn.Leaser)")
	}
	w := &worker{
		agent: opts.Agent, store: opts.Agent.Store, leaser: l, prepare: opts.Prepare,
		name: opts.Name, concurrency: max(opts.Concurrency, 1),
		ttl: opts.LeaseTTL, poll: opts.Poll, filter: Filter(opts.Queue), log: opts.Logger,
	}
	if w.name == "" {
		w.name = agent.DefaultHolder()
	}
	if w.ttl == 0 {
		w.ttl = agent.DefaultClaimTTL
	}
	if w.poll == 0 {
		w.poll = time.Second
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	w.log = w.log.With("worker", w.name)
	return w, nil
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
// store that is a driver.Claimer, else by listing and acquiring. It
// returns cairn.ErrNotFound when no session waits.
func (w *worker) claim(ctx context.Context) (cairn.Lease, error) {
	w.claimMu.Lock()
	defer w.claimMu.Unlock()
	if c, ok := w.store.(driver.Claimer); ok {
		return c.ClaimNext(ctx, w.name, w.ttl, w.filter)
	}
	infos, err := w.waiting(ctx)
	if err != nil {
		return cairn.Lease{}, err
	}
	slices.SortFunc(infos, func(a, b cairn.SessionInfo) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, info := range infos {
		lease, err := w.leaser.Acquire(ctx, info.ID, w.name, w.ttl)
		if err == nil {
			return lease, nil
		}
		if !errors.Is(err, cairn.ErrLeaseHeld) && !errors.Is(err, cairn.ErrNotFound) {
			return cairn.Lease{}, err
		}
	}
	return cairn.Lease{}, cairn.ErrNotFound
}

// waiting returns every session of the filter, page after page.
func (w *worker) waiting(ctx context.Context) ([]cairn.SessionInfo, error) {
	var infos []cairn.SessionInfo
	opts := w.filter
	for {
		page, err := w.store.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		infos = append(infos, page.Sessions...)
		if page.Next == "" {
			return infos, nil
		}
		opts.Cursor = page.Next
	}
}

// prepareSession returns the agent and run options of session id: those
// of Options.Prepare when set, else the worker's agent and none.
func (w *worker) prepareSession(ctx context.Context, id string) (*agent.Agent, []agent.RunOption, error) {
	if w.prepare == nil {
		return w.agent, nil, nil
	}
	info, err := w.store.Stat(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	ag, opts, err := w.prepare(ctx, *info)
	switch {
	case err != nil:
		return nil, nil, err
	case ag == nil:
		return w.agent, opts, nil
	case ag.Store != w.store:
		return nil, nil, errors.New("the agent of Options.Prepare has another store than the worker's")
	}
	return ag, opts, nil
}

// runSession runs (or resumes) the session of lease, acquired by a call
// that began at acquired, under that lease.
func (w *worker) runSession(ctx context.Context, lease cairn.Lease, acquired time.Time) {
	log := w.log.With("session", lease.Session, "token", lease.Token)
	log.Info("claimed")
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = w.leaser.Release(rctx, lease)
	}
	// leave gives up a session that could not be started. Its lease is
	// kept until it expires, so that the next claim takes another session
	// and this one is tried again a lease's time later: released at once,
	// the oldest waiting session, failing again, would be claimed again
	// and again, and the queue behind it would wait. At shutdown it is
	// released, for another worker to take at once.
	leave := func(what string, err error) {
		if ctx.Err() != nil {
			release()
			return
		}
		log.Warn(what, "err", err, "retry", "after its lease expires, in "+w.ttl.String())
	}
	ag, runOpts, err := w.prepareSession(ctx, lease.Session)
	if err != nil {
		leave("prepare", err)
		return
	}
	s, err := ag.Resume(ctx, lease.Session)
	if err != nil {
		leave("resume", err)
		return
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cl, err := s.Claim(ctx, agent.ClaimOptions{Adopt: lease, AcquiredAt: acquired, TTL: w.ttl, OnLost: func(err error) { cancel(err) }})
	if err != nil {
		leave("claim", err)
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
		events := s.Memory().Events()
		if s.Memory().Base() > 0 {
			// The session opened from a snapshot: the queued run may be
			// before it.
			rec, lerr := w.store.Load(ctx, lease.Session, 0)
			if lerr != nil {
				log.Warn("load the queued run", "err", lerr)
				return
			}
			events = rec.Events
		}
		input, ok := QueuedInput(events)
		if !ok {
			log.Warn("no queued run in the session; skipped")
			return
		}
		res, err = s.Run(runCtx, input, runOpts...)
	default:
		res, err = s.ResumeRun(runCtx, runOpts...)
	}
	switch {
	case cl.Err() != nil || errors.Is(err, cairn.ErrLeaseLost):
		log.Warn("lease lost; the session is another worker's now", "err", err)
	case errors.Is(err, agent.ErrLeaseExpired):
		log.Warn("lease could not be renewed; stopped acting, the session waits for another try", "err", err)
	case res != nil && res.Unsaved > 0:
		log.Warn("the store did not answer; the session waits for another try from its last saved step",
			"unsaved", res.Unsaved, "err", res.StoreError)
	case ctx.Err() != nil && err != nil:
		// A run that returned no error finished, even if the shutdown
		// began in the moment after: it is logged as finished below.
		log.Info("interrupted for shutdown")
	case err != nil:
		log.Warn("run failed; the session waits for another try", "err", err)
	default:
		log.Info("finished", "status", res.Status, "steps", res.Steps)
	}
}
