package sessions

import (
	"slices"

	"github.com/cairnhq/cairn"
)

// lossOf reports what the openai and checkpoint formats drop of m beyond
// what their export functions already said: what the events record that
// the message list and variables do not.
func lossOf(m *cairn.Memory, st *cairn.State, rep *Report) {
	if m.Session != nil {
		rep.drop("the session's ID, creation time and labels")
	}
	if m.Len() > 0 {
		if rep.Format == Checkpoint {
			rep.drop("event timestamps (only updated_at is kept)")
		} else {
			rep.drop("event timestamps")
		}
	}
	var runs, interrupts, approvals, started, messages int
	var modelDetails, durations bool
	var customTypes []string
	customs := 0
	for _, e := range m.Events() {
		v, err := e.Decode()
		if err != nil {
			continue // a memory's events decode; State already folded them
		}
		switch d := v.(type) {
		case *cairn.RunStarted:
			runs++
		case *cairn.RunInterrupted:
			interrupts++
		case *cairn.ApprovalDecided:
			approvals++
		case *cairn.ToolStarted:
			started++
		case *cairn.MessageSystem, *cairn.MessageUser, *cairn.MemoryCompacted:
			messages++
		case *cairn.ModelResponse:
			messages++
			modelDetails = modelDetails || d.Model != "" || d.LatencyMS != 0
		case *cairn.ToolResult:
			messages++
			durations = durations || d.DurationMS != 0
		case *cairn.Custom:
			customs++
			if !slices.Contains(customTypes, d.Type) {
				customTypes = append(customTypes, d.Type)
			}
		}
	}
	rep.dropCount(runs, "run", "runs", "run boundaries, outcomes and agent fingerprints (%s)")
	if st.Usage != (cairn.Usage{}) {
		rep.drop("token usage")
	}
	if modelDetails {
		rep.drop("model IDs, finish reasons and latencies")
	}
	if durations {
		rep.drop("tool durations")
	}
	rep.dropCount(interrupts, "interruption", "interruptions", "%s")
	rep.dropCount(approvals, "approval decision", "approval decisions", "%s")
	rep.dropCount(started, "tool start record", "tool start records", "%s")
	if customs > 0 {
		rep.drop("%s (%s)", plural(customs, "custom event", "custom events"), sentence(customTypes))
	}
	rep.dropCount(messages-len(st.Messages), "message", "messages", "%s superseded by a memory reset or a compaction summary")
}
