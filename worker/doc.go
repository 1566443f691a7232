// Package worker runs queued and interrupted sessions of a shared store:
// the claim loop behind `cairn worker`, for Go programs. Any number of
// workers, in any number of processes on any number of machines, can share
// one store; each session runs in one place at a time, under a lease.
//
// # Quick start
//
//	st, _ := cairn.Open(ctx, "postgres://db.internal/cairn", cairn.StoreOptions{})
//	a := &agent.Agent{Name: "support_bot", Model: model, Tools: tools, Store: st}
//
//	// Anywhere: queue a run. No model is called.
//	id, _ := worker.Enqueue(ctx, st, "summarise yesterday's tickets", worker.EnqueueOptions{})
//
//	// In each worker process: run sessions until ctx ends (SIGTERM, say).
//	err := worker.Run(ctx, worker.Options{Agent: a, Concurrency: 4})
//
// # Queues
//
// Enqueue records a queued run: a new session labelled QueueLabel=<queue>
// whose one event is a custom event of type QueuedType holding the input.
// Its status stays new until a worker starts it. No event kind is added for
// it, so the format stays at version 1 and any cairn reads such a session;
// `cairn run --detach` writes the same thing, and `cairn worker` and Run
// take each other's sessions.
//
// A worker takes the sessions of its queue (Filter) that are new, running
// (their worker died or stalled past its lease) or interrupted, and have
// no live lease, oldest first. A new session runs its queued input; the
// others are finished with agent.Session.ResumeRun, which never repeats a
// completed model call or tool call.
//
// # Leases and guarantees
//
// The store must have leases (cairn.Leaser): postgres, redis, mongodb,
// sqlite, file and memory have them. A worker claims a session in one step
// on a driver.Claimer, and otherwise lists the waiting sessions and tries
// Acquire on each; both are safe, since a lease has one holder at a time.
// The run then holds the lease through agent.Session.Claim: it is renewed
// every third of Options.LeaseTTL, every write is fenced with it, and the
// worker stops acting once it cannot be sure the lease is still its own
// (agent.ClaimOptions.Margin), so a worker that stalls and is taken over
// writes nothing more. On a store with driver.LocalLocker (sqlite, file) the
// worker also takes the session's lock file, as the cairn command does, so
// workers and commands on one machine exclude each other.
//
// When ctx ends, Run stops claiming, interrupts the runs under way (each is
// saved as run.interrupted, for another worker to finish), releases their
// leases and returns. docs/SCALING.md tells what each backend guarantees.
package worker
