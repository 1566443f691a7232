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
// Session.Run starts a fresh run: run.started (reset), memory.reset, the
// instructions and the input, written in one append. With Continue the
// memory is kept (run.started with reset false, then the input): the
// multi-turn pattern. Session.ResumeRun finishes an interrupted or crashed
// run with no new input.
//
// The loop: think builds a provider.Request from the State and calls the
// model; the response is recorded (with run.finished when it asks for no
// tool). Act runs the tool calls asked for, concurrently, and records each
// result in the model's order, with any variable change (state.set) in the
// same append. Tool errors and panics are error results the model sees. A
// run ends when the model answers without tool calls, after MaxSteps model
// responses (max_steps), when a tool needs approval (awaiting_approval),
// when the context is cancelled (run.interrupted, written with a context
// the cancellation cannot kill) or when the model fails (failed).
//
// # Resuming after a crash
//
// A resumed session never repeats a recorded model call or tool call.
// Calls asked for without results are run. A tool marked NotIdempotent
// records tool.started before it runs; if the process dies before its
// result is recorded, resuming gives the call the error result
// OutcomeUnknown instead of running it twice, unless the tool opted into
// RerunOnResume. A model call in flight when the process died is made
// again. The history sent to a model always pairs each tool call with its
// result.
//
// # Approvals
//
// A tool made with RequireApproval stops the run (awaiting_approval) until
// a person decides with Session.Approve; then Session.ResumeRun runs the
// approved calls and gives denied ones the error result
// "denied by a person: <note>". The need for a decision is recorded in the
// session, in the same append as the response that asks for the call (a
// run.interrupted{approval} listing the calls that wait), so every process
// refuses to run them until a decision is recorded, whatever its own tools
// say: Resume, Approve, ResumeRun. A pending call of a tool the resuming
// agent does not have is an *UnknownToolError; deny it to go on.
//
// # Store failures
//
// With OnError "degrade" (the default) an outage of the store does not
// stop the run: it goes on in memory, a *StoreWarning is logged once and
// kept in Session.Warnings, and the unsaved events are written in order,
// in one append, as soon as the store answers again (Result.Unsaved,
// Result.StoreError and Session.Flush). Three rules bound it:
//
//   - Only outages degrade (cairn.IsUnavailable: a refused, reset or timed
//     out connection, a server going away). Every answer of the store — a
//     conflict, a deleted session, an oversize event, a damaged or full
//     store, a permission error — stops the run with that error, as "fail"
//     does.
//   - A tool that is not idempotent runs only after its tool.started is in
//     the store. When the store cannot record it the call is not run and
//     the run stops as interrupted (reason store_degraded) with a
//     *NotRecordedError; model calls and idempotent tools go on in memory.
//     A start whose reply was lost may be in the store after all: a later
//     write that finds it there takes it into the memory, and the resumed
//     call is answered OutcomeUnknown rather than run twice.
//   - A holder acts only while its lease is surely valid (see Leases).
//
// With "fail" the run stops with a wrapped error and nothing half-written.
//
// # Leases
//
// Session.Claim takes the session's lease on a store that has leases
// (cairn.Leaser) and renews it every third of its TTL; every write is
// fenced with it. Before each model call and each tool call (and again
// after a tool's start is stored) the run checks Claim.Check: the holder
// may act only until the start of its last successful acquire or renewal
// plus the TTL, less a margin (TTL/5 by default), measured on its own
// monotonic clock. The store expires a lease no sooner than TTL after it
// granted or renewed it, which happened after the request left the holder,
// and a taker acquires only once the store says the lease expired. So a
// holder cut off from the store stops acting before anyone else can hold
// the session; the margin absorbs the difference in clock rates and the
// skew between the wall clocks of the machines that stamp expiries. Past
// that point the run stops as interrupted (reason lease_expired) with an
// error wrapping ErrLeaseExpired, and can be resumed by whoever holds the
// lease next. A claim held by an operating-system lock file is valid for
// as long as the process lives.
//
// # Long sessions
//
// A session's memory grows with every turn; the request sent to the model
// does not have to. Before each model call the agent estimates the
// request: the last model.response's usage (input and output tokens, the
// provider's own count) covers the messages up to it, if it came after the
// last compaction, and the messages after it count about 4 bytes of text a
// token plus a few tokens each (provider.EstimateTokens); with no usage,
// every message and the tools are counted so. When the estimate exceeds
// Agent.ContextTokens (0: DefaultContextTokens for the model, such as
// 128,000 for gpt-4o, 200,000 for claude-*, 8,192 for the offline and
// script models, 32,768 for one it does not know), older messages are
// compacted as Agent.Compaction says:
//
//   - CompactSummarize (the default): one model call with
//     provider.PurposeSummary writes a summary of the older messages that
//     folds in the earlier summary, given to it verbatim. The call is not
//     a model.response: it does not count as a step nor advance a script.
//     If it fails, the older messages are dropped as CompactDrop does,
//     keeping the earlier summary's text, and a *CompactionWarning is
//     raised.
//   - CompactDrop: a note says how many older messages were dropped.
//   - CompactOff: nothing is compacted.
//
// The messages kept are the recent ones that fit in half of what the
// budget leaves beside the instructions, the tools and the summary. The
// cut falls, preferably, before a user message; never between a tool call
// and its result, nor before a call that has no result yet (pending, or
// awaiting approval); and it always compacts at least one message, or
// nothing happens (logged once per run). One memory.compacted event
// records the summary and the last seq it covers, in one append: a crash
// leaves the session as it was or compacted, and a resumed run sees the
// compacted state. The fold keeps the instructions first, then the
// summary (a system message named cairn.SummaryName), then the recent
// messages; the events themselves all stay in the store, for transcripts,
// exports and forks.
//
// # Fingerprints
//
// Each run.started records the agent's fingerprint (model ID, SHA-256 of
// the instructions, SHA-256 of the tools' names and schemas). A run on a
// session last run by a different agent logs a *ResumeWarning, returns it
// in Session.Warnings and Result.Warnings, and goes on.
package agent
