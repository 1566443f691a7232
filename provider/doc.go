// Package provider defines what cairn needs from a language model, and its
// subpackages adapt real ones: openai (and every OpenAI-compatible server),
// anthropic, offline (deterministic, no key) and script (replays a JSON
// script, for tests and demos).
//
// # Quick start
//
//	m := offline.New() // or openai.New, anthropic.New, script.Load
//	resp, err := m.Generate(ctx, &provider.Request{
//		Messages: []cairn.Message{{Role: cairn.RoleUser, Content: "Hello"}},
//	})
//
// # Writing a model
//
// A Model is stateless: everything it needs comes in the Request, which the
// agent builds from the session's State. That is what lets any process
// resume a session with any model.
package provider
