// Package openai adapts the OpenAI Chat Completions API, and every server
// that speaks it (Ollama, vLLM, llama.cpp, LiteLLM, …), to cairn's
// provider.Model, on the official OpenAI Go SDK.
//
// # Quick start
//
//	m, err := openai.New(openai.Config{Model: "gpt-4o-mini"}) // key from OPENAI_API_KEY
//	if err != nil {
//		return err
//	}
//	resp, err := m.Generate(ctx, &provider.Request{
//		Messages: []cairn.Message{{Role: cairn.RoleUser, Content: "Hello"}},
//		OnText:   func(delta string) { fmt.Print(delta) },
//	})
//
// For a local server, set the base URL (or OPENAI_BASE_URL); a key is then
// optional:
//
//	m, err := openai.New(openai.Config{Model: "llama3.2", BaseURL: "http://localhost:11434/v1"})
//
// # What a call sends
//
// Every call streams (stream_options.include_usage is set, so token usage
// comes back). The conversation is sent as it stands: system messages in
// their place, user messages with their image and file parts, assistant
// messages with their tool calls (IDs and JSON arguments), tool messages
// with their call IDs. Chat Completions has no error flag on a tool
// message, so an error result is prefixed "error: " unless its text already
// starts with "error". Tool schemas are passed through as the functions'
// parameters.
//
// # What a call returns
//
// The text (streamed to Request.OnText as it arrives), the tool calls with
// the IDs the server gave them (one is made up when a server sends none),
// token usage, the finish reason as the server names it ("stop",
// "tool_calls", "length", "content_filter"; a server that ends a tool-calling
// turn with "stop" gets "tool_calls") and the model that answered. Tool
// arguments are raw JSON; arguments that are not valid JSON are passed on as
// a JSON string holding the text the model sent, so the tool fails with a
// clear decoding error that the model can read, rather than the call being
// lost. A stream that ends without a finish reason is an error, never a
// silently truncated answer.
//
// # Embeddings
//
// Embedder is a longterm.Embedder on the Embeddings API, for semantic
// search in long-term memory:
//
//	e, err := openai.NewEmbedder(openai.EmbedderConfig{Model: "text-embedding-3-small"})
//	mem, err := longterm.Open(ctx, "sqlite:///.cairn/cairn.db", longterm.Options{Embedder: e})
//
// It sends the texts in batches (EmbedderConfig.BatchSize), asks for float
// vectors of EmbedderConfig.Dimensions when set, and checks the answer:
// one vector per text, in place, all of one length. Its Name,
// "openai:MODEL" (with "@DIMENSIONS" when asked), is stored with each
// vector, so that vectors of another model are never compared with its
// own. Errors and retries are as for Generate.
//
// # Errors and retries
//
// Requests that fail with 408, 409, 429, a 5xx status or a connection error
// are retried by the SDK, DefaultMaxRetries times unless Config.MaxRetries
// says otherwise, with exponential backoff (0.5 s doubling, capped at 8 s)
// that gives way to the server's Retry-After or Retry-After-Ms header (a
// server that asks for more than two minutes ends the retries at once). An
// HTTP error that ends a call is a *StatusError naming the status, the
// server's message and the attempts made. Cancelling the context stops a
// call at once, during a request, a stream or a backoff wait, and the error
// wraps context.Canceled.
package openai
