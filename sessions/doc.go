// Package sessions holds the operations on whole sessions that the cairn
// command, its HTTP server and library users share: writing a history in
// one piece, forking, copying between stores, and exporting and importing
// in three formats (the native cairn memory document, the OpenAI Chat
// Completions message list, and the checkpoint document).
//
// Each operation leaves a store as it was when it fails: a session written
// whole is either all there or not there at all.
//
// # Writing and forking
//
// [Write] creates a session and appends a history to it in as few appends
// as the store allows. [Fork] copies a session up to a seq into a new one
// that is whole: a fork in the middle of a run ends with run.interrupted,
// so that it lists as interrupted and resumes as any interrupted run.
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
// either a memory whose events are valid from seq 1, or an error that says
// what is wrong and where (the message index, the field and the byte
// offset). The openai and checkpoint imports rebuild the events a run would
// have written and check that the history is one a model provider accepts.
// Their report says what the import had to make up, such as the event
// times. [Detect] tells the format of a document by its shape; [Save]
// writes an imported memory to a store so that a process killed half way
// leaves a session marked incomplete, which [SweepImports] removes.
//
//	m, rep, err := sessions.Import(data, "", sessions.ImportOptions{ID: "imported-1"})
//	if err != nil {
//		return err // *sessions.ImportError or *cairn.MemoryLoadError
//	}
//	if err := sessions.Write(ctx, store, *m.Session, m.Events()); err != nil {
//		return err
//	}
//	fmt.Println(rep)
package sessions
