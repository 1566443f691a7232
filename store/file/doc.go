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
//	      ack.json            log length and last seq acknowledged, rewritten after each append
//	      lock                the session's token; what flock locks
//	      lease.json          the session's lease, once one was taken
//	      snapshot            the session's snapshot, once one was put
//	      search.jsonl        the text of its events that Search indexes
//	    .search-feed          the sessions appended to lately, for Search
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
// outside DIR. (List opens a session's folder through the Root and its
// small files by name inside it, with O_NOFOLLOW: no link either.) Names
// starting with a dot are never IDs, so the temporary folders cannot
// collide with sessions; List skips them and anything that is not a
// folder.
//
// # Design
//
// An Append returns once its lines are durable: a crash of the process or of
// the machine loses nothing acknowledged. The appends of all the store's
// sessions that arrive at one moment share one write and one fdatasync of
// the store's journal (a group commit). Several processes on one machine may
// share a folder: each session has a lock file that flock serialises its
// writers on, and leases for workers live in the session's folder. A damaged
// session (a log shorter than acknowledged, a line that fails its checksum,
// a missing file) is a *driver.DamagedError: it is listed as damaged, never
// cut or written over, and every other session goes on. What an append
// acknowledged is recorded twice, in info.json and in ack.json, so that a
// log cut short is found even when one of the two went with it. With a TTL, expired
// sessions are invisible at once and Sweep removes them. The store keeps
// each session's latest snapshot (cairn.Snapshotter), and a Load from a
// seq in the later half of a history reads the end of the log alone, so
// that opening a long session from its snapshot costs what the events
// after it cost.
//
// # Platforms
//
// The store runs on Linux and macOS, where every sync is F_FULLFSYNC
// (macOS's fsync leaves the data in the drive's cache) and the journal's
// half locks are flocks on files of their own. On any other system, such
// as Windows, the package builds but Open returns an error matched by
// errors.ErrUnsupported: use the sqlite store there.
//
// How the log, the journal, locking, recovery, damage, leases, snapshots,
// expiry and the platforms work, step by step: docs/STORES.md, "The file
// store".
//
// # Search
//
// The store is a cairn.Searcher. Each session's folder holds its events'
// text, by seq, in search.jsonl: a line per append, written once the
// append is durable and deleted with the folder. The file is derived from
// the log and checked against its length, so one that lags (a crash
// between the two writes, a session older than search) is caught up from
// the log. A store's first Search reads every file into an index in
// memory; later ones read only the files of the sessions that the feed
// (.search-feed, a line per append) names since. BM25's statistics are
// over the namespace's events, expired sessions included until swept.
//
// # Long-term memory
//
// LongTerm keeps long-term memory (package longterm) in DIR/.longterm: one
// file of JSON lines per namespace, in folders that mirror its path, one
// writer at a time (flock), each write durable before it returns, a new
// key appended and every other change written whole and renamed into
// place, so that an erased item is in no file. docs/MEMORY.md, "The file
// backend".
package file
