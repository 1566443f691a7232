// Package steps makes a loop of your own durable, step by step, without
// cairn's agent: each step the loop takes — a model call, a tool call, any
// function — is recorded in a cairn session as it happens, and a re-run of
// the loop on the same session gets the recorded results back, in order,
// instead of running the steps again. It works on every store (memory,
// file, sqlite, postgres, redis, mongodb, and store/crypt over any of
// them), and the sessions it writes are ordinary cairn sessions: `cairn
// sessions show`, the inspector, export, fork, TTL, encryption and erasure
// work on them unchanged.
//
// # Quick start
//
//	s, err := steps.Open(ctx, store, "order-7", steps.Options{})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	quote, err := steps.Run(ctx, s, "quote", func(ctx context.Context) (Quote, error) {
//		return pricing.Quote(ctx, cart) // runs once; a re-run returns the recorded Quote
//	})
//	if err != nil {
//		return err
//	}
//	_, err = steps.Run(ctx, s, "charge", func(ctx context.Context) (string, error) {
//		return payments.Charge(ctx, quote) // never twice: its start is recorded first
//	}, steps.NotIdempotent())
//	if errors.Is(err, steps.ErrOutcomeUnknown) {
//		// A process died while charging: ask the provider, then s.Resolve(…).
//	}
//	return s.Finish(ctx, "done")
//
// # What is recorded, and when
//
// Each step is one atomic append, made before the step's call returns: the
// step's result with the variables set before and in it (Set). A step
// marked NotIdempotent appends its start first, durable before its
// function runs. The events are the ones every reader of a session knows:
// Run writes a custom event of type cairn.step (and cairn.step.started)
// whose payload is a Record (name, position, result as JSON or error as
// {code, message}); Model writes model.response; Tool writes tool.started
// and tool.result; User and System write message.user and message.system;
// Set writes state.set; the first step of a run writes run.started, and
// Finish and Fail write run.finished.
//
// # Re-runs
//
// Open places the loop at the start of the session's last run. The k-th
// step the loop asks for is matched with the k-th step recorded there: a
// step with the same name (a model call, a tool call with the same call ID,
// a message with the same text) returns its recorded result, decoded into
// the step's type, and its function does not run; anything else is a
// *MismatchError (ErrNotDeterministic), since the loop no longer asks for
// the steps it asked for. Past the last recorded step the loop runs live
// again. So a loop must ask for the same steps in the same order on every
// run, deciding only on its inputs and on its steps' results: read the
// clock, random numbers, files and services inside steps.
//
// A not-idempotent step found started without a result (the process died
// between the two) is not run again: the call returns an
// *OutcomeUnknownError and the caller decides — Resolve records what it
// found out, ResolveError records a failure (or, given the error itself,
// that the outcome stays unknown), or the loop goes on and every re-run
// meets the same question at the same point.
//
// # Leases
//
// Options.Claim runs the session in one process at a time: it takes the
// session's lease, fences every append with it and renews it until Close.
// Without it, the store's seq check still keeps two processes from forking
// the history: the one whose write is refused reads what the other
// recorded and returns that (a not-idempotent step's start is the claim on
// its effect).
//
// docs/STEPS.md in the repository says what is not supported yet.
package steps
