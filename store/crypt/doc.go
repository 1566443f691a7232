// Package crypt encrypts a cairn store at rest: a wrapper around any
// cairn.Store that seals every event with AES-256-GCM before it reaches the
// backend and opens it on the way back.
//
// # Quick start
//
//	key, err := crypt.LoadKeyFile("cairn.key") // 32 random bytes, base64 or hex
//	ring, err := crypt.NewKeyring(key)
//	store, err := crypt.Open(ctx, "sqlite:///.cairn/cairn.db", cairn.StoreOptions{}, ring)
//
// # Keys
//
// Each session's events are sealed with a random data key of its own, made
// at its first append and stored wrapped by the keyring's current master
// key, with that key's ID, in a key session: a session of the same ID in
// the namespace KeyNamespace(ns) of the same backend. Delete deletes the
// key session first, so that what a backend keeps of a deleted session
// (free pages, a write-ahead log, dead rows, backups) is ciphertext whose
// key is gone. Rekey wraps every data key by a new master key without
// rewriting any event.
//
// # Sealed events
//
// Every value is sealed with the session's namespace, ID, the event's
// seq, kind and run as additional data, so a row moved to another session
// or position does not open. A sealed event keeps its kind and a data of
// that kind's shape, all fields empty but one string that carries the
// ciphertext, and the two words listings need (the status of run.finished,
// whether run.interrupted awaits an approval): backends validate and
// summarise it like any event. A sealed message.user also carries the start
// of its text sealed on its own, which List opens to show the first
// message. Load refuses, with the session, seq and reason, a row that is not
// sealed (ErrPlaintext), does not authenticate or whose clear words were
// changed (ErrTampered), or whose key the keyring lacks (ErrUnknownKey).
//
// docs/SECURITY.md describes what is encrypted, what stays clear and what
// each backend keeps after Delete.
package crypt
