// Package formats exports a session's memory to a document and imports one
// back: the native cairn memory document, the OpenAI Chat Completions
// message list, and the checkpoint document (agent profile, step, variables
// and a role/content history).
//
// # Exporting
//
// [Export] writes a [cairn.Memory] in a [Format] and returns a [Report] of
// what that format could not carry, in words a person understands ("token
// usage", "3 session variables", "event timestamps"). The cairn format
// carries everything: its report is empty.
//
// # Importing
//
// [Import] parses and validates the whole input before it returns anything:
// either a memory whose events are valid from seq 1, ready to be written in
// one go, or an error that says what is wrong and where (the message index,
// the field and the byte offset). The openai and checkpoint imports rebuild
// the events a run would have written (run.started, the messages, model
// responses with their tool calls, tool results, state.set, and run.finished
// or run.interrupted) and check that the history is one a model provider
// accepts: every tool message answers a tool call an earlier assistant
// message made. Their report says what the import had to make up, such as
// the event times. [Detect] tells the format of a document by its shape.
//
// A session's compaction summary (a memory.compacted event) is exported in
// the openai and checkpoint formats as the system message that the model
// sees, named "cairn_summary" ([cairn.SummaryName]) after the
// instructions; importing such a message back, after nothing but system
// messages, records a memory.compacted again, so the summary folds as it
// did.
//
//	m, rep, err := formats.Import(data, "", formats.ImportOptions{ID: "imported-1"})
//	if err != nil {
//		return err // *formats.ImportError or *cairn.MemoryLoadError
//	}
//	_ = store.Create(ctx, *m.Session)
//	_ = store.Append(ctx, m.Session.ID, 0, m.Events()...)
//	fmt.Println(rep)
package formats
