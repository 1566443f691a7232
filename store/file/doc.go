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
//	      meta.json, info.json, ack.json, lock, lease.json, snapshot, search.jsonl
//	    .journal/             the group commit, once a store has appended
//
// Every path is opened through an os.Root on DIR: no ID, and no symbolic
// link planted in the folder, can make the store read or write outside it.
//
// # Design
//
// An Append returns once its lines are durable: a crash of the process or of
// the machine loses nothing acknowledged. The appends of all the store's
// sessions that arrive at one moment share one write and one fdatasync of
// the store's journal (a group commit). Each session has a lock file that
// flock serialises its writers on, across processes, and leases for
// workers live in the session's folder. A damaged session (a log shorter
// than acknowledged, a line that fails its checksum, a missing file) is a
// *driver.DamagedError: listed as damaged, never cut or written over, and
// every other session goes on. With a TTL, expired sessions are invisible
// at once and Sweep removes them. The store keeps each session's latest
// snapshot ([cairn.Snapshotter]), and a Load from a seq late in a history
// reads the end of the log alone.
//
// The store is a [driver.Searcher]: each session's folder holds its events'
// text, which a store's first Search reads into an index in memory.
// [LongTerm] keeps long-term memory (package longterm) in DIR/.longterm.
//
// # Platforms
//
// The store runs on Linux and macOS, where every sync is F_FULLFSYNC
// (macOS's fsync leaves the data in the drive's cache). On any other
// system, such as Windows, the package builds but Open returns an error
// matched by errors.ErrUnsupported: use the sqlite store there.
//
// The whole folder layout, the log, the journal, locking, recovery, damage,
// leases, snapshots, search, expiry and the platforms, step by step:
// docs/STORES.md, "The file store"; the long-term files: docs/MEMORY.md,
// "The file backend".
package file
