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
// [HTTP] reaches a streamable-HTTP server instead of a command. With a
// client session of your own, Tools converts its tools without owning the
// session (no restart when it ends):
//
//	cs, _ := client.Connect(ctx, transport, nil)
//	tools, err := mcp.Tools(ctx, cs, mcp.Config{Name: "fx"})
//
// # Crash safety and approval
//
// [Classify] turns annotations into a [Class]: readOnlyHint or
// idempotentHint make a tool idempotent, run again when a run is resumed
// after a crash; every other tool is agent.NotIdempotent, its call answered
// agent.OutcomeUnknown on resume instead of running twice. A tool that is
// not read-only and does not say destructiveHint: false needs a person's
// approval before each call. Annotations are hints from the server: pin a
// server's or a tool's class with [Policy] when they are wrong or not
// trusted. The class of each call is recorded in the session, so a process
// that resumes it with another configuration applies the recorded rule.
//
// # Results and failures
//
// Text blocks are kept as they are, structured content as JSON, resource
// links and embedded text resources with their URI; binary content becomes a reference (kind, MIME
// type, size, SHA-256, and where Config.Blobs kept the bytes), never the
// bytes. The text, an error's too, is cut to Config.MaxOutput bytes. An MCP
// error, a result with isError, a call past its timeout and a server that
// stops during a call are error results the model sees; a server that
// stopped, or had a call cut off, is started again for the next call.
//
// A command ([Command]) runs in a process group of its own, which closing
// the [Server] terminates, then kills; on Linux the group is also killed
// when the process that started it dies, SIGKILL included.
//
// # Names
//
// A tool's name is the server's name, '_', and the tool's name with every
// character a model API refuses replaced by '_'; one longer than 64 is
// shortened and ends with a hash. A tool whose input schema a model cannot
// take is skipped, and Server.Skipped says why.
//
// docs/MCP.md has the configuration, the names, the classes and the
// default stance, what a call records, what happens when a server stops,
// hangs or is cut off, and the faults as tested.
package mcp
