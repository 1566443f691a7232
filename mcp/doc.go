// Package mcp gives an agent the tools of MCP (Model Context Protocol)
// servers, through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): each tool of a server becomes an
// agent.Tool named SERVER_TOOL, whose crash-safety class comes from the
// tool's annotations unless a Policy pins it.
//
// # Quick start
//
//	srv, err := mcp.Connect(ctx, mcp.Config{
//		Name:      "fs",
//		Transport: mcp.Command("npx", []string{"-y", "@modelcontextprotocol/server-filesystem", "/data"}, nil, ""),
//	})
//	if err != nil { … }
//	defer srv.Close()
//	a := &agent.Agent{Model: m, Tools: append(builtin.Tools(), srv.Tools()...), Store: st}
//
// With a client session of your own, Tools converts its tools without
// owning the session (no restart when it ends):
//
//	cs, _ := client.Connect(ctx, transport, nil)
//	tools, err := mcp.Tools(ctx, cs, mcp.Config{Name: "fx"})
//
// # Crash safety and approval
//
// Classify turns annotations into a Class: readOnlyHint or idempotentHint
// make a tool idempotent, run again when a run is resumed after a crash;
// every other tool (one without annotations too) is agent.NotIdempotent:
// its tool.started is recorded before it runs, and a call that started
// without a recorded result gets agent.OutcomeUnknown on resume instead of
// a second run. A tool that is not read-only and does not say
// destructiveHint: false (the specification's default is true) needs a
// person's approval before each call (agent.RequireApproval).
//
// Annotations are hints from the server; the specification tells clients
// not to rely on them for servers they do not trust. They only decide what
// cairn does around a call — the server runs with its own rights either
// way. Pin a server's or a tool's class with Policy when its hints are
// wrong or not trusted.
//
// The class of each call is recorded in the session, so a process that
// resumes it with another configuration applies the recorded rule: a call
// whose tool.started is recorded gets OutcomeUnknown whatever the tool's
// class is now, and a call recorded as awaiting approval waits for a
// decision in every process.
//
// # Results
//
// A result's text blocks are kept as they are; binary content (images,
// audio, blobs) becomes a reference — kind, MIME type, size and SHA-256,
// and where Config.Blobs kept the bytes — never the bytes themselves;
// resource links and embedded text resources keep their URI; structured
// content is added as JSON when no text block holds it already. The text
// is cut to Config.MaxOutput bytes, saying so, and so is an error's: the
// cut is the agent's own (agent.CutOutput), which the agent applies again
// to every tool's text at its own limit.
//
// An MCP error, a result with isError, a call past its timeout and a
// server that stops during a call are error results the model sees. A
// server that stopped is started again for the next call, and so is one
// with a call cut off, past its timeout or cancelled: a server may ignore
// a cancellation, and one stuck in a call would keep every later call
// waiting (see Server).
//
// # Processes
//
// A command (Command) runs in a process group of its own, which closing
// the Server terminates, then kills, so that what the command started
// (npx starts node) ends with it. On Linux the group is also killed when
// the process that started it dies, SIGKILL included: the command runs
// under a small sh that the parent-death signal reaches, started from a
// thread that lives as long as the process.
//
// # Names
//
// Model APIs accept tool names of letters, digits, '_' and '-' (64 at
// most): a tool's name is the server's name, '_', and the tool's name with
// every other character replaced by '_'; a longer name is shortened and
// ends with a hash of the tool's name. A server's name has no '_', so the
// first '_' of a recorded name ends it. A tool whose input schema a model
// cannot take (not a JSON Schema object of type "object") is skipped, and
// Server.Skipped says why.
package mcp
