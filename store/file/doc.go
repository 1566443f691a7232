// Package file is a cairn store on the local disk: one folder per session,
// holding an append-only log of JSON lines. It needs no server, survives
// crashes of the process and of the machine, and lets several processes on
// one machine share a folder.
//
// # Quick start
//
//	s, err := file.Open(ctx, "/var/lib/myagent/sessions", cairn.StoreOptions{})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//
// or, through the URL registry, cairn.Open(ctx, "file:///var/lib/myagent/sessions",
// opts). "file:rel/dir" and "file:///./rel/dir" name a folder relative to
// the working directory (a first path segment starting with a dot is
// relative).
//
// # Folder layout
//
//	DIR/                      the store's folder (created 0700 if missing)
//	  NAMESPACE/              one folder per namespace
//	    SESSION-ID/           one folder per session
//	      events.jsonl        the events, one JSON envelope per line
//	      meta.json           SessionMeta and SessionInfo, durable checkpoint
//	      info.json           SessionInfo cache, rewritten after each append
//	      lock                empty; what flock locks
//	    .tmp-RANDOM/          a session being created
//	    .trash-RANDOM/        a session being deleted
//
// Every path is opened through an os.Root on DIR, and the namespace's folder
// through a Root inside it. IDs and namespaces are validated first (A-Z a-z
// 0-9 _ -, so never "." or "/"), and the Root is a second wall: no ID, and
// no symbolic link planted in the folder, can make the store read or write
// outside DIR. Names starting with a dot are never IDs, so the temporary
// folders cannot collide with sessions; List skips them and anything that
// is not a folder.
//
// # The log
//
// Each line of events.jsonl is an event envelope
// {"v":1,"seq":N,"at":"…","kind":"…","run":"…","data":{…}}, with the data
// written byte for byte as given (data spanning several lines is compacted
// first). The lines of one Append are written with a single write call;
// every line of an append but its last ends with a space before its
// newline, which marks the append as continued. Seqs are dense from 1.
//
// # Durability
//
// An Append is acknowledged only after its one write and one fsync of
// events.jsonl: an acknowledged append survives a crash of the process or
// of the machine. Nothing else is fsynced on that path, so that an append
// costs one fsync and does not grow with the history:
//
//   - info.json, the SessionInfo that List shows (status, steps, first
//     message, updated time, last seq), is overwritten in place after the
//     fsync, without one of its own. It records the log length it covers and
//     a CRC-32C of its content, so a reader that finds it torn, half written
//     or behind the log knows not to trust it.
//   - meta.json holds the same information and is replaced atomically and
//     durably (a temporary file, fsynced, renamed over, the folder fsynced):
//     when the session is created, as a checkpoint each time the log has
//     grown by 4 MiB, and after a recovery.
//
// Creating a session builds its folder under a temporary name, fsyncs
// every file and the folder, renames it into place and fsyncs the namespace
// folder: a session exists whole or not at all. Deleting renames the
// folder to a trash name (atomic, and fsynced) and then removes it.
//
// # Locking
//
// Each session has two locks: an in-process mutex, and an OS file lock
// (flock) on its lock file, exclusive for Create, Append, Delete and Sweep,
// shared for Load. The OS releases a file lock when its process dies, even
// by SIGKILL, so a crashed writer never leaves a session locked. A caller
// waiting for another process's lock polls, so its context can stop the
// wait.
//
// Under the lock, every call first checks that the session's lock file is
// still the one it has open (the store keeps it open, which pins its inode):
// if the folder was deleted it returns ErrNotFound, so a late append can
// neither bring a deleted session back nor land in a removed file. It then
// compares the log's length with the length it last saw (kept in memory
// while the store is open): if another process appended, info.json covers
// the new lines; the expected seq is checked against the result, and a
// stale one is ErrConflict.
//
// # Recovery
//
// When the log is longer than any info covers, a crash interrupted a
// writer. Under the lock the store reads only the lines past the covered
// length: whole appends (ending in a line without the continued mark) are
// kept and summarised into the info, dated by the log's modification time;
// what follows them (an incomplete line, an unreadable one, or the first
// lines of an append that never got its last) was never acknowledged and
// is cut off with the exclusive lock (and ignored with the shared one). A
// readable line with a wrong seq, or one after an unreadable line, is
// damage rather than a crash: that is an error, and nothing is cut.
//
// # Expiry
//
// With a TTL, a session expires TTL after its last update on the store's
// clock (StoreOptions.Now). An expired session is invisible at once to
// every method; Sweep deletes expired sessions (and leftovers of creations
// and deletions a crash interrupted), and Create reuses an expired ID.
package file
