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
// key in a key session of the same ID, in the namespace KeyNamespace(ns)
// of the same backend. Delete deletes the key session first, so that what
// a backend keeps of a deleted session is ciphertext whose key is gone.
// Rekey wraps every data key by a new master key without rewriting any
// event.
//
// # An encrypted namespace
//
// The key namespace records which namespaces hold sealed sessions, and
// under which master keys. Open without a keyring opens a guard, which
// refuses such a namespace with an *EncryptedError; a guard made by Wrap
// refuses it at its first call, and any session whose events are sealed.
// A store whose current key the namespace does not name refuses every
// write with a *WrongKeyError; a namespace gains keys only by Rekey.
// Code that reads a backend without this package finds sealed events with
// CheckUnsealed. Store.CheckSessions names the sessions a keyring cannot
// open; Store.Inspect and Store.Repair mend a session given events in
// clear by a process without the key.
//
// # Sealed events and snapshots
//
// A value is sealed with the session's namespace and ID and the event's
// seq, kind and run as additional data, so a row moved elsewhere does not
// open. A sealed event keeps its kind and a data of that kind's shape, so
// backends validate and list it like any event. Load refuses a row that is
// not sealed ([ErrPlaintext]), does not authenticate or whose clear words
// were changed ([ErrTampered]), or whose key the keyring lacks
// ([ErrUnknownKey]). Snapshots are sealed with the session's data key, and
// one that does not open is [cairn.ErrSnapshotInvalid]: cairn.Restore
// folds the events instead.
//
// # Long-term memory
//
// WrapLongTerm and OpenLongTerm encrypt a long-term store (package
// longterm) with the same keyring: values, texts and vectors are sealed
// with a data key per namespace, and the text index is given keyed hashes
// of the words, so search works without a word stored.
//
// docs/SECURITY.md, "Encryption and erasure", has the key files, the
// method, what is encrypted and what stays clear, the marker and the
// wrong-key rule, repair, rotation, snapshots and what each backend keeps
// after Delete; docs/MEMORY.md, "Encryption", does for long-term memory.
package crypt
