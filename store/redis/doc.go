// Package redis is the cairn store on Redis 7 or later, standalone, behind
// Sentinel, or Redis Cluster. It needs no Redis modules.
//
// # Quick start
//
//	s, err := redis.Open(ctx, "redis://127.0.0.1:6379/0", cairn.StoreOptions{
//		Namespace: "agent_sessions",
//		TTL:       24 * time.Hour,
//	})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//
// Open accepts redis:// and rediss:// (TLS) URLs with go-redis's query
// parameters, pings the server, and owns the connection it makes. To bring
// your own client (custom TLS or pooling), call New; the caller then owns
// the client and Close leaves it open. Importing the package registers the
// "redis" and "rediss" schemes with cairn.Open, so the same URLs work in
// the CLI's --store, cairn.toml and its [connections], sessions copy and
// the worker.
//
// # URLs
//
// One URL form per kind of deployment, all go-redis's own:
//
//	redis://HOST:PORT/DB                            a single server
//	redis://HOST:PORT?addr=HOST2:PORT2&addr=...     Redis Cluster: the seed nodes
//	redis://HOST:PORT?cluster=true                  Redis Cluster from one seed node
//	redis://SENTINEL:26379/DB?master_name=NAME&addr=SENTINEL2:26379
//	                                                the master a Sentinel names
//
// Several addr parameters, or cluster=true, make a *goredis.ClusterClient
// (database 0 only); master_name makes a Sentinel failover client, whose
// addresses are the sentinels' (password= and username= give the master's
// credentials, the URL's user info the sentinels'). A single-server URL
// that reaches a cluster node is refused by Open with ErrClusterNode, and
// a MOVED, ASK or CROSSSLOT reply met through a client passed to New says
// the same. The store's own parameters, in any form: min_replicas and
// replica_timeout (see Replication). ParseStoreURL reads a URL without
// connecting; Store.Kind and Store.Topology say what a store reached
// (`cairn doctor` prints it). The store turns off
// go-redis's maintenance notifications, which plain servers do not know,
// and turns on ContextTimeoutEnabled, so that every call ends with its
// context; do the same in clients you pass to New (ParseURL does it for
// you). Errors that mean the server could not be reached or could not
// serve (a network error, LOADING, MASTERDOWN, TRYAGAIN, CLUSTERDOWN, a
// pool timeout) wrap cairn.ErrUnavailable.
//
// # Calls whose reply is lost
//
// The store sends calls again after an outage itself, three times at
// most, backing off as go-redis does; ParseURL turns go-redis's own
// retries off (MaxRetries -1), and clients passed to New should have them
// off too. A read is simply sent again, and so is a write that surely did
// not reach Redis (no connection could be made). A write whose reply was
// lost may have been applied, and applying it again could do twice what
// was asked once (delete a session created since), or answer that nothing
// happened where the first try did it (the session exists, is gone, has
// moved on, the lease is no longer the caller's). So it is never sent
// again: the store asks Redis for the evidence that it was applied, its
// events at their seqs for an append, or for Create, Acquire, Takeover,
// Renew, Release and AppendFenced the random nonce each call carries,
// which the script notes with its answer in the meta's "calls" field (the
// last eight calls). Found, the call answers as its first try did (a
// fenced append or a release whose lease was taken over since included);
// not found, or for a Delete (which leaves no sign), the call returns an
// error that wraps cairn.ErrUnavailable: its outcome is unknown.
//
// # Replication
//
// Redis replicates asynchronously: a master acknowledges a write before
// its replicas have it, and when the master dies a replica promoted in its
// place has lost whatever had not reached it. With min_replicas=N in the
// URL an append waits, with Redis WAIT sent on the same connection right
// after the append's script, until N replicas acknowledge it, for
// replica_timeout at most (default 2s; a bare number is milliseconds). If
// fewer did, the append was applied on the master but returns a
// *ReplicaError that wraps cairn.ErrUnavailable: a run degrades or fails
// by its on_error rule, and a non-idempotent tool does not run on a
// tool.started that only the master holds. Sent again, the same append
// answers as a retry and waits again. Append and AppendFenced wait;
// Create, the lease calls and Delete do not.
//
// What WAIT promises, and what it does not: it is not consensus. An append
// that returned holds on N replicas' memory, so the death of its master
// alone does not lose it as long as one of those replicas is the one
// promoted (Redis Cluster and Sentinel prefer the most up-to-date
// replica, but do not guarantee it). It does not survive every replica
// and the master dying at once (no fsync is implied; that is WAITAOF and
// persistence settings), and an append that returned a ReplicaError may
// be kept or lost by a failover. docs/RELIABILITY.md measures it.
//
// # Key layout
//
// Every key of a session carries the hash tag {<namespace>:<id>}, so all of
// them hash to one Cluster slot and one script can touch them together:
//
//	cairn:<ns>:{<ns>:<id>}:meta     hash: created_at, updated_at (RFC 3339,
//	                                UTC), expires_at (Unix ns, 0: never),
//	                                status, steps, first_message, labels
//	                                (JSON), last_seq, lease_holder,
//	                                lease_token, lease_expires, calls (the
//	                                nonces of the last calls noted, with
//	                                their answers), and once a snapshot
//	                                was put snapshot_seq and snapshot (its
//	                                bytes, as given)
//	cairn:<ns>:{<ns>:<id>}:events   list: one JSON event envelope per event,
//	                                in seq order; the data bytes exactly as
//	                                appended, so a reload gives them back
//	cairn:<ns>:sessions             sorted set: session IDs scored by their
//	                                updated time in Unix microseconds
//	cairn:<ns>:claimable            sorted set: the IDs of the sessions that
//	                                are new, running or interrupted, scored
//	                                by their created time in Unix
//	                                microseconds, and the marker "" (-inf)
//	                                once it is complete (single server only)
//
// and the side indexes, whose keys carry the hash tag {cairn:<ns>:sessions}
// (the whole name of the namespace index) so that they share its slot:
//
//	cairn:<ns>:{cairn:<ns>:sessions}:ids
//	                                sorted set, every score 0: the session
//	                                IDs in byte order (a prefix is a
//	                                ZRANGEBYLEX range), and the marker ""
//	                                once complete
//	cairn:<ns>:{cairn:<ns>:sessions}:expiry
//	                                sorted set: the sessions that expire,
//	                                scored by their expiry in Unix µs
//	cairn:<ns>:{cairn:<ns>:sessions}:status:<status>
//	                                sorted set: the sessions of a status,
//	                                scored by updated time as the index is
//	cairn:<ns>:{cairn:<ns>:sessions}:label:<len(key)>:<key>=<value>
//	                                sorted set: the sessions that carry a
//	                                label, scored the same way
//
// Namespaces and IDs hold only A-Z a-z 0-9 _ -, so the braces and colons
// are unambiguous and two namespaces never share a key.
//
// # Atomicity
//
// Create, Append and Delete are each one Lua script, run with EVALSHA
// (falling back to EVAL once when the server's script cache is empty), so
// each is atomic and costs one round trip. Append checks that the meta
// exists and has not expired, that last_seq equals the expected seq (else
// cairn.ErrConflict; a missing or expired session is cairn.ErrNotFound),
// pushes the events with RPUSH, applies driver.Summarize of the events to the
// meta and refreshes the TTL. Nothing in it depends on the length of the
// history. Load reads the meta and the events from the wanted seq on (one
// LRANGE from that position) in one MULTI/EXEC, so the two agree.
//
// All times come from cairn.StoreOptions.Now and reach the scripts as
// arguments; the scripts never read Redis's clock, so expiry follows the
// store's clock exactly (tests inject one).
//
// # Snapshots
//
// Store is a cairn.Snapshotter. A session's snapshot is two fields of its
// meta hash rather than a key of its own: it shares the session's slot,
// its native TTL (which every Create and Append refresh, and a put does
// not) and its deletion, by Delete, Sweep, Create over an expired session
// and Redis's own expiry, with no script of the session to change.
// PutSnapshot is one script that checks the session is live and keeps the
// snapshot of the higher seq; every other read of the meta names its
// fields, so a large snapshot costs nothing to them. A Load from a seq is
// one LRANGE from that seq's position.
//
// # TTL
//
// A store with a TTL writes each session's expiry into its meta and gives
// every key of the session a relative Redis TTL of that many seconds,
// rounded up, refreshed by every Create and Append. Reads treat a session
// whose expires_at has passed on the store's clock as gone at once; Redis
// deletes its keys by itself soon after (the native TTL is never shorter
// than the logical one when the store's clock is the real one). Sweep
// deletes expired sessions now and cleans the indexes; List purges the
// expired sessions it meets. The index carries a TTL too, extended to the
// latest of its sessions' expiries, so an idle namespace vanishes whole.
// The claim set's TTL is extended only when a session enters it (appends
// that keep the status leave it alone), so it can expire before a session
// kept alive by such appends; the next claim then rebuilds it. A store
// without a TTL that appends to a session makes it permanent again, as the
// memory store does.
//
// # The index and Redis Cluster
//
// A script may only touch keys of one slot on Redis Cluster, and the
// namespace index cannot share the slot of every session. So the store
// works in one of two ways, chosen by New from the client's type:
//
//   - On a single server (a *goredis.Client, Sentinel included) the index
//     key is passed to the scripts, which update it in the same atomic step
//     as the session: the index is always exact.
//   - On a *goredis.ClusterClient or *goredis.Ring the scripts touch only
//     the session's slot, and the store updates the index right after a
//     script succeeded (a second round trip, to the index's node; a score
//     only ever rises there, since two updates of one session may arrive
//     out of order). The trade-off: between the two steps, or if the
//     process dies between them, the index can lag the session. List reads
//     every session's meta anyway, so it never shows stale fields, removes
//     entries of sessions that are gone and repairs scores that disagree
//     with the meta; the next Append of a session re-adds a lost entry. A
//     session created by a process that died before its index update stays
//     out of List until its next Append (Load still finds it), and a List
//     racing such repairs can, rarely, order or page a session wrongly.
//
// The side indexes follow the same two ways: on a single server the
// scripts of Create, Append, AppendFenced and Delete keep them in the same
// atomic step (building their keys from the index's name); on Cluster and
// Ring the store reads the session's meta after each write and runs one
// script on the index's slot that sets the index score and the side
// indexes together, or does nothing when the index already holds a later
// write's score. List repairs side entries whose status or score disagree
// with the meta, as it repairs the index.
//
// List walks a sorted set scored by updated time from the newest score
// down, from the cursor's time, in batches, reads each batch's metas in
// one pipeline, and stops as soon as it holds more than a page of matching
// sessions that nothing further down can precede. Without a filter it
// walks the namespace index; with a status filter the sets of its
// statuses; with a label filter the set of its smallest label, when that
// holds fewer sessions than the status sets. So a filter with no match
// reads no meta, and a rare one reads the few it matches. A prefix reads
// its range of the ID set and the metas of those sessions: its cost
// follows the sessions it matches, whatever the namespace holds. Time
// filters bound every walk. Sessions found missing or expired are removed
// from every index on the way. A session whose keys Redis deleted on their
// TTL leaves its label entries until a List that walks those sets meets
// them (its other entries go with the next Sweep).
//
// Sweep walks the expiry set from the earliest expiry up to the store's
// now, 100 sessions at a time (one short script each, in one pipeline),
// so its cost follows the number of expired sessions and no writer waits
// for more than one session's removal. CountExpired counts the same
// sessions without removing them.
//
// Upgrading: a namespace written by an earlier version of the store has no
// side indexes. The first List with a prefix, status or label filter, or
// the first Sweep or CountExpired, finds no marker in the ID set and
// builds them from the namespace index in one pass (as a claim builds the
// claim set), then adds the marker. Writes of this version keep them in
// step whether or not the marker is there; sessions written meanwhile by
// processes of the earlier version are missing from them, so stop those,
// then delete cairn:<ns>:{cairn:<ns>:sessions}:ids to have them rebuilt.
//
// # Claims
//
// Store is a cairn.Claimer. On a single server, ClaimNext is one script
// that walks the claim set oldest first, reads each session's meta, and
// leases the first one that is live, has a status and the labels of the
// filter, and no live lease, as Acquire does: one atomic step whose cost
// depends on the sessions it passes over (those leased by other workers,
// or of other labels), not on the size of the namespace. Create adds a
// session to the claim set, Delete, Sweep and List's pruning remove it, and
// only an append that moves the status into or out of new, running and
// interrupted touches it; a claim drops the entries of sessions that
// expired or whose keys Redis deleted. Filters on other statuses (or none)
// list and acquire instead.
//
// The claim script builds the meta keys of the sessions it reads from
// their IDs rather than receiving them in KEYS: Redis runs such a script on
// a single server (it replicates the script's effects), but Redis Cluster
// cannot, and some proxies and managed services that insist on declared
// keys refuse it. On a *goredis.ClusterClient or *goredis.Ring there is no
// claim set: ClaimNext lists the matching sessions, oldest first, and tries
// Acquire on each. That is correct, since Acquire is atomic, but it is not
// one step and its cost grows with the number of waiting sessions.
//
// Upgrading: sessions written by an earlier version of the store are not
// in a claim set. A claim that finds no complete set (no marker: never
// built, or expired with the namespace's TTL while sessions lived on)
// builds it from the index first, in one pass. While processes of the
// earlier version still write to the namespace, the sessions they create
// or restart are not added: claim from those with the earlier version's
// workers, or, once the last of them has stopped, delete
// cairn:<ns>:claimable so that the next claim rebuilds it.
//
// Requires Redis 7.0 or later (EXPIRE … GT).
package redis
