// Package script is a model that replays a JSON script, for tests and
// demos: {"steps":[{"text":…,"tool_calls":[{"name":…,"arguments":{…}}],"delay_ms":N}]}.
//
// # Quick start
//
//	m, err := script.Load("testdata/refund.json") // or script.New(script.Script{…})
//	if err != nil {
//		return err
//	}
//	a := &agent.Agent{Name: "demo", Model: m, Tools: builtin.Tools(), Store: st}
//
// # Which step answers
//
// The step answered is the request's Responses count (model responses
// recorded since the session's last memory.reset), never process memory, so
// a process that resumes a session continues the script where the dead one
// stopped. Tool call IDs are deterministic: "call_<step>_<i>", both from 0.
// Past the last step Generate returns an error wrapping
// provider.ErrScriptEnded. A summary request (provider.PurposeSummary, a
// compaction) is answered with provider.Digest and consumes no step.
package script
