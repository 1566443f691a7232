// Package eino makes CloudWeGo Eino graphs durable on cairn stores.
//
// Two pieces, usable apart:
//
//   - CheckPointStore is Eino's compose.CheckPointStore on any cairn store
//     (sqlite, postgres, redis, mongodb, file, memory, and store/crypt over
//     them): each checkpoint Eino saves is appended to a cairn session as
//     an event, Get returns the latest, and the earlier ones stay in the
//     history for time travel (History, Fork). TTL, deletion and
//     encryption are the store's.
//   - Recorder records a graph's model calls and tool calls in a cairn
//     session as they happen (Handler, a callbacks.Handler), with the
//     events cairn's own agent writes, so that `cairn sessions show ID
//     --transcript` and the inspector read an Eino run like a cairn run;
//     its Tool wrapper records each tool call as a step of the
//     github.com/cairnhq/cairn/steps package, so that a call already
//     recorded is not run again and a NotIdempotent tool runs at most once
//     across crashes.
//
// The module is separate from cairn's core module, so that programs that
// do not use Eino do not pull it in.
//
// docs/EINO.md in the repository says what is saved when, what a resume
// does, and what is not supported.
package eino
