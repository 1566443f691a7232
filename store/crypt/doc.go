// Package crypt encrypts a cairn store at rest: a wrapper around any
// cairn.Store that seals every event with AES-256-GCM before it reaches the
// backend and opens it on the way back.
//
// # Quick start
//
//	key, err := crypt.LoadKeyFile("cairn.key") // 32 random bytes: raw, base64 or hex
//	ring, err := crypt.NewKeyring(key)
//	store, err := crypt.Open(ctx, "sqlite:///.cairn/cairn.db", cairn.StoreOptions{}, ring)
//
// The store Open and Wrap return has exactly the optional abilities of the
// backend (leases, claims, checks), so the agent and the worker find them
// as they would on the backend itself.
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
// # An encrypted namespace
//
// Before the first event of a namespace is sealed, the store records in
// the key namespace that this namespace holds encrypted sessions, with the
// master key IDs (a marker, never deleted). Open without a keyring opens a
// guard, and refuses such a namespace at once with an *EncryptedError
// naming those key IDs; a guard made by Wrap refuses it at its first call,
// and refuses any session whose events are sealed. A process without the
// key can then neither take ciphertext for text nor add plaintext to an
// encrypted session. Code that reads a backend without this package finds
// sealed events with CheckUnsealed.
//
// The marker also decides who may write. It names each key by its ID and
// fingerprint (Key.Fingerprint); a store whose current key it does not
// name refuses every write (Create, appends, snapshots, leases, Delete,
// Sweep, Repair) with a *WrongKeyError, so that a wrong key file cannot
// seal sessions the namespace's key does not open. A namespace takes its
// first key with its first sealed event, and later keys only by Rekey,
// run with a keyring that holds one of its keys. Store.CheckSessions
// names the sessions a keyring cannot open.
//
// A session that a process without the key damaged before this rule (events
// in clear after sealed ones) does not load with the key (ErrPlaintext);
// Store.Inspect finds such events and Store.Repair seals them, or cuts them
// off, keeping the whole history in a backup session.
//
// # Sealed events
//
// Every value is sealed with the session's namespace, ID, the event's
// seq, kind and run as additional data, so a row moved to another session
// or position does not open. A sealed event keeps its kind and a data of
// that kind's shape, all fields empty but one string that carries the
// ciphertext, and the two words listings need (the status of run.finished,
// whether run.interrupted awaits an approval): backends validate and
// summarise it like any event. The form is defined in the core
// (sealedData, sealToken), so that code without a key can
// recognise it. A sealed message.user also carries the start
// of its text sealed on its own, which List opens to show the first
// message. Load refuses, with the session, seq and reason, a row that is not
// sealed (ErrPlaintext), does not authenticate or whose clear words were
// changed (ErrTampered), or whose key the keyring lacks (ErrUnknownKey).
//
// # Snapshots
//
// Over a store that keeps snapshots (cairn.Snapshotter) the encrypting
// store keeps them too, sealed with the session's data key and bound to
// the namespace, the session and the snapshot's seq: the wrapped store
// holds a token (sealToken) as the snapshot's bytes. A snapshot
// that does not open (in clear, changed, moved, or of an earlier session
// of the ID) is refused with an error wrapping cairn.ErrSnapshotInvalid,
// and cairn.Restore folds the events instead. Read without the key, a
// sealed snapshot is never a state: a plain store's Restore finds it
// invalid, and a guard refuses it (cairn.ErrSealed).
//
// # Long-term memory
//
// WrapLongTerm and OpenLongTerm encrypt a long-term store (package
// longterm) with the same keyring: each item's value, text and vector are
// sealed with its namespace's data key, bound to its namespace and key;
// the wrapped store's text index is given keyed hashes of the words
// (HMAC-SHA-256 under the store's index key), so that text search and its
// ranking work without a word stored; vector search opens and compares
// here. The keys live in the wrapped store under LongTermKeys, and
// DeleteNamespace erases a namespace's data key before its items. A
// keyring that cannot open the index key (another master key) reads and
// writes nothing.
//
// docs/SECURITY.md describes what is encrypted, what stays clear and what
// each backend keeps after Delete; docs/MEMORY.md does for long-term
// memory.
package crypt
