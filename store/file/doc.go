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
//	      lease.json          the session's lease, once one was taken
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
// (flock) on its lock file, exclusive for Create, Append, Delete, Sweep and
// every lease change, shared for Load and CurrentLease. The OS releases a file lock when its process dies, even
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
// # Leases
//
// The store implements cairn.Leaser. A session's lease is lease.json in its
// folder:
//
//	{"format":"cairn.file.lease","version":1,"session":"…","holder":"…","token":N,"expires":"…"}
//
// It is read and replaced only under the session's exclusive lock (the
// shared one for CurrentLease), so Acquire, Takeover, Renew, Release and
// AppendFenced are each one atomic step between all the processes that
// share the folder. AppendFenced checks the lease under the same lock as
// the expected seq, before the log's one write and one fsync. A plain
// Append never reads lease.json, and nothing of it is cached, so a lease
// changed by another process is seen at once.
//
// A lease change is durable before it returns: the new lease.json is
// written beside the old one (lease.json.tmp), fsynced, renamed over it,
// and the folder fsynced. A crash leaves the old lease or the new one,
// whole; a leftover lease.json.tmp is ignored, and replaced by the next
// change.
//
// The token in the file is the last one handed out; Release empties the
// holder and keeps it. The next token is one more, or the machine's clock
// in microseconds when that is larger: a session deleted or expired and
// created again starts without lease.json, and its tokens are still above
// its earlier self's unless the clock went back. A lease is the session's
// while the file names a holder and has the lease's token and holder.
// Expiry is on the store's clock (StoreOptions.Now); a lease does not move
// the session's own TTL. Delete and Sweep remove the lease with the folder.
//
// A lease.json the store cannot read (not JSON, torn, another format or
// version, another session's, no token) is never taken for a free lease,
// which could let a second holder in beside one that still writes: every
// lease call and fenced append of the session fails with an error naming
// the file, and leaves the file as it is. Append, Load and Delete go on.
// The store only ever replaces the file whole, so such a file was changed
// by something else; once no process runs the session, remove it, and the
// next Acquire starts again from the clock, above the lost tokens.
//
// Between processes on one machine, the cairn command also takes an
// operating-system lock file per session (agent.ClaimOptions.LockFile),
// which frees the session at once when its process dies: a dead process's
// lease is then taken over instead of waiting for it to expire.
//
// # Expiry
//
// With a TTL, a session expires TTL after its last update on the store's
// clock (StoreOptions.Now). An expired session is invisible at once to
// every method; Sweep deletes expired sessions (and leftovers of creations
// and deletions a crash interrupted), and Create reuses an expired ID.
package file
