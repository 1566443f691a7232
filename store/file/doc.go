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
//	      lock                the session's token; what flock locks
//	      lease.json          the session's lease, once one was taken
//	    .tmp-RANDOM/          a session being created
//	    .trash-RANDOM/        a session being deleted
//	    .journal/             the group commit, once a store has appended
//	      RANDOM              a journal: 8 MiB, one per store open at once
//	      lock                held while a store opening replays journals
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
// Each line of events.jsonl is an event envelope led by its checksum,
// {"crc32c":"1a2b3c4d","v":1,"seq":N,"at":"…","kind":"…","run":"…","data":{…}}:
// the CRC-32C of the envelope without that field, which is as
// cairn.AppendEnvelope writes it (compact, so one line whatever the data's
// spacing). The lines of one Append are written with a single write call;
// every line of an append but its last ends with a space before its
// newline, which marks the append as continued. Seqs are dense from 1.
// Lines written before the checksum existed start with {"v": and are read
// without it; a line without one after a line with one is damage.
//
// # Durability
//
// An Append is acknowledged only once its lines are durable: it survives a
// crash of the process or of the machine. The lines are written to
// events.jsonl with one write call and are not fsynced there. A copy goes
// to the store's journal, a file of .journal/ that the store holds while
// it is open, and the journal makes it durable with the appends of every
// other session of the store that arrived at the same moment: one write
// and one fdatasync for all of them (a group commit). Each caller returns
// only after the fdatasync that covers its own lines. One session's
// appends still follow one another, under the session's lock; the sharing
// is between sessions.
//
// The journal is zero-filled when it is made, so that its writes never
// change its size and its fdatasync flushes data alone. It has two halves,
// written one at a time. When the half being written is full, appends go
// on in the other one while, in the background, the store fsyncs the log
// of every session the full half holds appends of and then zeroes that
// half (a checkpoint); the store closing checkpoints both. An append only
// waits for a checkpoint when both halves fill before it ends. An append
// larger than a quarter of a half (1 MiB) is fsynced in its log instead,
// and so is every append once the journal failed a write.
//
// Nothing else is fsynced on the append path, so that an append costs one
// fdatasync, shared, and does not grow with the history:
//
//   - info.json, the SessionInfo that List shows (status, steps, first
//     message, updated time, last seq), is overwritten in place after the
//     append is durable, without an fsync of its own. It records the log
//     length it covers and a CRC-32C of its content, so a reader that finds
//     it torn, half written or behind the log knows not to trust it.
//   - meta.json holds the same information and is replaced atomically and
//     durably (a temporary file, fsynced, renamed over, the folder fsynced):
//     when the session is created, as a checkpoint each time the log has
//     grown by 4 MiB, and after a recovery.
//
// Creating a session builds its folder under a temporary name, fsyncs
// every file and the folder, renames it into place and fsyncs the namespace
// folder: a session exists whole or not at all. Its lock file holds a
// random token, which tells it from a session of the same ID made after it
// was deleted. Deleting renames the folder to a trash name (atomic, and
// fsynced), removes it, and voids the session's records in every journal
// of the namespace, those of stores still open included: a voided record
// keeps its length, and its bytes, ID and token are zeroed. Once Delete
// returns, no file of the store holds the session's events.
//
// A journal record is {magic, CRC-32C, generation, session ID, token,
// offset in the log, the lines}. The records of a half follow each other
// from its start, all of one generation (new each time the half is
// written again), and every byte after them is zero.
//
// # Locking
//
// Each session has two locks: an in-process mutex, and an OS file lock
// (flock) on its lock file, exclusive for Create, Append, Delete, Sweep and
// every lease change, shared for Load and CurrentLease. The OS releases a
// file lock when its process dies, even by SIGKILL, so a crashed writer
// never leaves a session locked. A caller waiting for another process's
// lock polls, so its context can stop the wait.
//
// A journal has locks of its own: its owner's flock on the file, held
// while the store is open, and a write lock per half (an
// open-file-description lock on a byte past the file's end) that the owner
// takes around each write of the half and the zeroing of a checkpoint, and
// a Delete in any store around voiding records in it.
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
// # Recovery and damage
//
// An Append returns once its lines are whole and durable, and then writes
// info.json. So the log's first bytes, as far as info.json, meta.json or
// the store itself last acknowledged, are acknowledged events: the store
// never cuts or rewrites them. A log shorter than that, or one that does
// not end an event there, is damaged.
//
// Past that length, a crash may have left more. Under the lock the store
// reads only those lines: whole appends (ending in a line without the
// continued mark) are kept and summarised into the info, dated by the
// log's modification time (an append acknowledged just before its process
// died, before its info.json); what follows them (an incomplete line, one
// that fails its checksum or does not read, the first lines of an append
// that never got its last) was never acknowledged and is cut off with the
// exclusive lock (and ignored with the shared one). A readable line with a
// wrong seq, or one after an unreadable line, is damage rather than a
// crash, and nothing is cut.
//
// A crash of the machine can also take from a log what the journal holds.
// So Open first replays the journals that no open store holds (each store
// holds its own with a flock, which its process's death releases), under
// the lock in .journal/, so that a second store opening at the same time
// waits for the replay instead of reading logs before it. For each session
// whose folder still has the record's token, the replay writes the
// records' lines at their offsets, in the order of the offsets (a session
// appended by several processes has records in each one's journal),
// fsyncs the log, then zeroes the journal for the next store to take. A
// record torn by the crash fails its checksum and is skipped: its append
// was never acknowledged. A log that ends before a record's offset lost
// lines that a checkpoint had made durable: that session is damaged, its
// records stay in their journal (which keeps what the log lost, and
// nothing of the other sessions, whose records are replayed and voided),
// and Open goes on with the others.
//
// A damaged session (a log cut short or changed, a line that fails its
// checksum, a meta.json that does not read, a folder without its lock file
// or log, journal records that do not fit) is a *cairn.DamagedError, which
// wraps cairn.ErrDamaged and names the session and the file. The store
// writes nothing to it and repairs nothing: Load, Append and the lease
// calls return the error, List shows the session as cairn.StatusDamaged
// and goes on with the others, Sweep leaves it, and Delete removes it (and
// voids its journal records). info.json alone is a cache: one that fails
// its checksum, which a crash can leave, is rebuilt from meta.json and the
// log. Check (cairn.Checker, run by `cairn doctor`) reads every log
// through. docs/RELIABILITY.md ("Damaged storage") has the rules.
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
// the expected seq, before the log's write and the journal's commit. A plain
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
