// Package cairn is durable memory for AI agents.
//
// An agent built with cairn records every step of its work — each model
// call, each tool call, each change to its variables — as a typed [Event]
// appended to a [Store], one atomic append per step. Any process can later
// load the session, rebuild its exact [State] by folding the events in
// order, and go on: the next turn of a chat, a run that was interrupted, a
// run whose process was killed, a run waiting for a person's approval.
//
// This package is the core: the event kinds and their data, [Memory] (the
// ordered events of one session, with [Memory.DumpJSON] and [LoadJSON]),
// [State] with its canonical [State.Snapshot], session ID rules, the
// sentinel errors, and the [Store] contract that every backend implements.
// It imports no backend and no model provider.
//
// # Events
//
// An event is the envelope
//
//	{"v":1,"seq":N,"at":"RFC 3339 UTC","kind":"…","run":"…","data":{…}}
//
// Seqs start at 1 and are dense. The kinds are fixed per format version
// (see the Kind constants); an unknown kind is an error on load, except
// "custom", which carries an application's own namespaced type.
//
// # Stores
//
// Backends live in their own packages under store/: memory (the reference),
// file, sqlite (the embedded default), postgres, redis and mongodb. Each
// registers a URL scheme, so [Open] reaches any of them by URL once its
// package is imported. Every backend passes the same conformance suite,
// store/storetest.
//
// # Quick start
//
//	store, _ := memory.New(cairn.StoreOptions{})
//	_ = store.Create(ctx, cairn.SessionMeta{ID: "review-pr-42"})
//
//	var m cairn.Memory
//	evs, _ := m.Add(cairn.MustEvent(cairn.KindMessageUser, "run-1",
//		cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "Review PR 42"}}}))
//	_ = store.Append(ctx, "review-pr-42", 0, evs...) // ErrConflict if someone else appended first
//
//	rec, _ := store.Load(ctx, "review-pr-42", 0)
//	st, _ := cairn.Fold(rec.Events) // the same State, byte for byte
//
// The agent package runs sessions on top of this: a think/act loop that
// checkpoints every step and resumes after a crash without repeating work.
package cairn
