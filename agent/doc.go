// Package agent runs sessions: an Agent (a model, instructions, tools,
// limits and a store) thinks and acts in a loop, and records every step as
// events in a cairn.Store, one atomic append per step. Any process can
// resume a session from the store and continue it.
//
// # Quick start
//
//	st, _ := memory.New(cairn.StoreOptions{}) // or cairn.Open(ctx, "sqlite:///.cairn/cairn.db", …)
//	a := &agent.Agent{
//		Name:         "assistant",
//		Instructions: "You are a helpful assistant.",
//		Model:        offline.New(),
//		Tools:        builtin.Tools(),
//		Store:        st,
//	}
//	s, _ := a.Open(ctx, "thread-42")             // resume it, or start it with that ID
//	res, _ := s.Run(ctx, "Hello", agent.Continue()) // a turn that sees the earlier ones
//	fmt.Println(res.Output)
//
// # Runs
//
// Session.Run starts a fresh run (run.started, memory.reset, the
// instructions and the input, in one append); with Continue the memory is
// kept: the multi-turn pattern. Session.ResumeRun finishes an interrupted
// or crashed run with no new input. A response's tool calls run
// concurrently; their results (errors and panics as error results) and any
// state.set are recorded in the model's order, in one append. Every tool's
// text is cut to Agent.MaxToolOutput bytes ([CutOutput]), so that no tool
// can make an event the store refuses. A run ends when the model asks for
// no tool, after MaxSteps responses, when a tool needs approval, when ctx
// is cancelled (run.interrupted, written with a context the cancellation
// cannot kill) or when the model fails.
//
// # Resuming after a crash
//
// A resumed session never repeats a recorded model call or tool call; calls
// asked for without results are run, and a model call in flight when the
// process died is made again. A tool marked [NotIdempotent] records
// tool.started before it runs: if the process dies before its result, the
// call gets the error result [OutcomeUnknown] instead of running twice,
// unless the tool opted into [RerunOnResume]. A model always sees each tool
// call paired with its result. Each run.started records the agent's
// [cairn.Fingerprint]: a run on a session last run by another agent logs a
// *[ResumeWarning], keeps it in Session.Warnings, and goes on.
//
// # Approvals
//
// A tool made with [RequireApproval] stops the run (awaiting_approval) until
// a person decides with Session.Approve; Session.ResumeRun then runs the
// approved calls and gives denied ones the error result "denied by a
// person: <note>". The wait is recorded with the response that asks for
// the call, so no process runs it undecided. A pending call of a tool the
// agent lacks is an *[UnknownToolError]; deny it to go on.
//
// # Store failures and leases
//
// With OnError "degrade" (the default) a store outage does not stop the
// run: it goes on in memory, a *[StoreWarning] is logged once, and the
// unsaved events are written in one append once the store answers
// (Result.Unsaved, Result.StoreError, Session.Flush); a non-idempotent tool
// waits for its tool.started to be stored, or the run stops as interrupted
// (*[NotRecordedError]). With "fail" the run stops with a wrapped error and
// nothing half-written. Session.Claim takes the session's lease, renews it
// every third of its TTL, fences every write with it, and stops the run
// (lease_expired, [ErrLeaseExpired]) before the lease may have passed to
// another holder. The rules and why they hold: docs/RELIABILITY.md, "The
// rules under partial failure".
//
// # Long sessions
//
// Past Agent.ContextTokens (0: DefaultContextTokens), older messages are
// compacted as Agent.Compaction says (CompactSummarize, the default,
// CompactDrop or CompactOff); every event stays in the store. The estimate
// and the cut: docs/COMPACTION.md.
package agent
