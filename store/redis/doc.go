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
// min_replicas=N makes Append and AppendFenced wait (Redis WAIT) until N
// replicas hold the append, for replica_timeout at most (default 2s; a
// bare number is milliseconds); fewer is a *ReplicaError, the append
// applied on the master. WAIT is not consensus: docs/RELIABILITY.md,
// "Redis failover".
//
// A client passed to New should be set up as ParseURL sets its own:
// maintenance notifications off (plain servers do not know them),
// ContextTimeoutEnabled on (every call ends with its context) and go-redis's
// retries off (MaxRetries -1): the store retries by itself.
//
// # What the store does
//
// Create, Append and Delete are each one atomic Lua script and one round
// trip, whose cost does not grow with the history. Expiry follows
// cairn.StoreOptions.Now, not Redis's clock (keys also get a native TTL).
// Store is a [cairn.Leaser], [driver.Claimer], [driver.Sweeper],
// [cairn.Snapshotter] and [driver.Searcher] (an index of its own). Every key
// of a session shares one hash slot; on Cluster and Ring the namespace
// index is updated right after each write, so it can lag a session for a
// moment (List repairs what it meets), and ClaimNext lists and acquires,
// at a cost that grows with the waiting sessions.
//
// An outage wraps [cairn.ErrUnavailable]. The store sends a call again up
// to three times, but never a write whose reply was lost: it asks Redis
// whether that write was applied and answers as the first try did, or,
// without that evidence (and always for Delete), returns an error wrapping
// cairn.ErrUnavailable: the outcome is unknown.
//
// A namespace written by an earlier version builds its side indexes, claim
// set and text index on first use. docs/STORES.md, "The Redis store", has
// the key layout, the scripts, lost replies, replication, leases, TTL,
// List, claims, search and, while processes of that version still write to
// the namespace, Upgrading.
package redis
