package cairn

// LocalLocker is an optional ability of a Store kept on this machine's
// disk (the file and SQLite stores): its sessions can be locked by the
// operating system. Every process that runs a session of the store locks
// the file LockFile names, and the kernel releases the lock when the
// process dies, however it dies, so the session is free again at once
// after a crash (agent.ClaimOptions.LockFile takes it). Without it — a
// store on a server, or in one process's memory — a claim relies on
// leases alone.
type LocalLocker interface {
	// LockFile returns the lock file of session id: beside the store,
	// under "<store's real path>.locks/<namespace>/", named "<id>.lock".
	// The store's real path is absolute with every symbolic link
	// resolved, so every name of one store (a link to it, a relative
	// path) gives the same file, and another store or namespace another.
	// It only names the file; nothing is created. It returns "" when
	// there is no lock file: an id that breaks the ID rules, or a
	// wrapper over a store that has none. Safe for concurrent use.
	LockFile(id string) string
}
