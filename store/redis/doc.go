// Package redis is the cairn store on Redis 7.0 or later (EXPIRE … GT),
// standalone, behind Sentinel, or Redis Cluster. It needs no Redis modules.
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
// parameters, pings the server, and owns the client it makes. New takes a
// client of your own (custom TLS or pooling), which Close leaves open.
// Importing the package registers the "redis" and "rediss" schemes with
// cairn.Open, so the same URLs work in the CLI's --store, cairn.toml and its
// [connections], sessions copy and the worker.
//
// # URLs
//
//	redis://HOST:PORT/DB                            a single server
//	redis://HOST:PORT?addr=HOST2:PORT2&addr=...     Redis Cluster: the seed nodes
//	redis://HOST:PORT?cluster=true                  Redis Cluster from one seed node
//	redis://SENTINEL:26379/DB?master_name=NAME&addr=SENTINEL2:26379
//	                                                the master a Sentinel names
//
// A cluster client uses database 0 only. With master_name, password= and
// username= are the master's credentials and the URL's user info the
// sentinels'. A single-server URL that reaches a cluster node is refused
// with ErrClusterNode, as is a MOVED, ASK or CROSSSLOT reply through a
// client passed to New. ParseStoreURL reads a URL without connecting;
// Store.Kind and Store.Topology say what a store reached (`cairn doctor`).
//
// A client passed to New should be set up as ParseURL sets its own:
// maintenance notifications off (plain servers do not know them),
// ContextTimeoutEnabled on (every call ends with its context) and go-redis's
// retries off (MaxRetries -1): the store retries by itself.
//
// # Errors and lost replies
//
// Errors that mean the server could not be reached or could not serve (a
// network error, LOADING, MASTERDOWN, TRYAGAIN, CLUSTERDOWN, a pool
// timeout) wrap cairn.ErrUnavailable. After an outage the store sends a
// call again up to three times, but never a write whose reply was lost: it
// asks Redis whether that write was applied (its events, or the nonce the
// call's script noted) and answers as the first try did, or, without that
// evidence (and always for Delete), returns an error wrapping
// cairn.ErrUnavailable: the outcome is unknown.
//
// # Replication
//
// Redis replicates asynchronously. With min_replicas=N in the URL, Append
// and AppendFenced wait (Redis WAIT) until N replicas acknowledge the
// append, for replica_timeout at most (default 2s; a bare number is
// milliseconds). If fewer did, the append is applied on the master but
// returns a *ReplicaError wrapping cairn.ErrUnavailable: a run degrades or
// fails by its on_error rule, and a non-idempotent tool does not run on a
// tool.started that only the master holds. Sent again, the append answers
// as a retry and waits again. Create, the lease calls and Delete do not
// wait. WAIT is not consensus: docs/RELIABILITY.md, "Redis failover".
//
// # What the store does
//
// Create, Append and Delete are each one atomic Lua script and one round
// trip, whose cost does not grow with the history. Expiry follows
// cairn.StoreOptions.Now, not Redis's clock (keys also get a native TTL).
// Store is a cairn.Leaser, Claimer, Sweeper and Snapshotter. Every key of
// a session shares one hash slot; on Cluster and Ring the namespace index
// is updated right after each write, so it can lag a session for a moment
// (List repairs what it meets), and ClaimNext lists and acquires, at a
// cost that grows with the waiting sessions.
//
// # Search
//
// Store is a cairn.Searcher, with a text index of its own (no module). The
// append script writes, with the events, each event's postings into a
// sorted set in the session's slot: per token (named by TokenHash, never
// by its text) its count and the event's length. Beside the side indexes,
// the namespace keeps which sessions hold each token, and the BM25
// statistics, over the namespace. On a single server the same script
// writes those; on Cluster and Ring the token's sessions are written just
// before the script and the counts just after, so no event is stored
// unfindable and the postings decide what matches. A search reads the
// sessions its words are in, whatever the namespace's size, and never
// returns an expired one. Delete, Sweep and a Create over an expired
// session remove a session's entries.
//
// A namespace written by an earlier version builds its side indexes and
// claim set on first use, and its text index on the first Search (reading
// every session's events once, which that version's later writes miss);
// while processes of that version still write to it, read docs/STORES.md,
// "The Redis store", Upgrading; the key layout, scripts, leases, TTL, List
// and claims are there too, step by step.
package redis
