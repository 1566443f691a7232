package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/group"
	"github.com/cairnhq/cairn/internal/unixnano"
)

func init() { driver.RegisterByURL(Open, "redis", "rediss") }

// Store is a cairn.Store on a Redis server or Redis Cluster, seeing one
// namespace. It is safe for concurrent use, and many Stores, in many
// processes, may share one namespace.
type Store struct {
	client goredis.UniversalClient
	opts   cairn.StoreOptions
	owned  bool   // Close closes the client: Open made it
	kind   string // KindSentinel for a client Open made from a Sentinel URL, else ""
	split  bool   // the index lives in another slot: updated after the scripts
	prefix string
	index  string
	claims string // the claimable sessions, oldest first (see claim.go)
	ttl    string // the TTL in whole seconds, rounded up, for EXPIRE; "0": none
	guard  driver.Guard

	rebuildMu sync.Mutex // one rebuild of the claim set at a time
	searchMu  sync.Mutex // one indexing of the namespace's sessions at a time (searchReady)

	minReplicas    int           // an append waits until this many replicas hold it (see replicas.go)
	replicaTimeout time.Duration // how long it waits

	queue group.Queue[*scriptCall] // pipelined appends (group.go)
}

var (
	_ cairn.Store    = (*Store)(nil)
	_ driver.Sweeper = (*Store)(nil)
)

// New returns a store on client, which the caller owns: Close leaves it
// open. Any go-redis client works, a Redis Cluster client included; for a
// *goredis.ClusterClient or *goredis.Ring the store updates the namespace
// index outside the session's script (see the package documentation).
// Make the client with ContextTimeoutEnabled, as ParseURL does: without it
// go-redis waits for a silent server until its own read timeout, whatever
// the context of the call. And make it with MaxRetries -1, as ParseURL
// does: the store sends a call again after an outage itself, knowing that
// the reply to the first try was lost; go-redis's own retry of a script
// cannot know it, and may answer that nothing happened (the session exists,
// is gone or has moved on, the lease is lost) where the first try did it.
func New(client goredis.UniversalClient, opts cairn.StoreOptions) (*Store, error) {
	split := false
	switch client.(type) {
	case *goredis.ClusterClient, *goredis.Ring:
		split = true
	}
	return newStore(client, opts, split)
}

func newStore(client goredis.UniversalClient, opts cairn.StoreOptions, split bool) (*Store, error) {
	if client == nil {
		return nil, errors.New("redis store: nil client")
	}
	opts, err := driver.Options(opts)
	if err != nil {
		return nil, err
	}
	prefix := "cairn:" + opts.Namespace + ":"
	ttl := int64(0)
	if opts.TTL > 0 {
		ttl = int64((opts.TTL + time.Second - 1) / time.Second)
	}
	s := &Store{
		client: client,
		opts:   opts,
		split:  split,
		prefix: prefix,
		index:  prefix + "sessions",
		claims: prefix + "claimable",
		ttl:    strconv.FormatInt(ttl, 10),
	}
	s.initGroup()
	return s, nil
}

// Open connects to the Redis deployment a redis:// or rediss:// URL names,
// pings it, and returns a store that owns the connection: Close closes it.
// The URL takes go-redis's query parameters (dial_timeout, pool_size, …)
// and the store's own (min_replicas, replica_timeout); its three forms,
// standalone, Redis Cluster and Sentinel, are described in the package
// documentation. A standalone URL that reaches a Redis Cluster node is
// refused with an error that names the cluster form.
func Open(ctx context.Context, rawURL string, opts cairn.StoreOptions) (*Store, error) {
	uo, err := ParseStoreURL(rawURL)
	if err != nil {
		return nil, err
	}
	client, err := uo.dial(ctx, "redis store")
	if err != nil {
		return nil, err
	}
	s, err := newStore(client, opts, uo.Kind == KindCluster)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	s.owned = true
	if uo.Kind == KindSentinel {
		s.kind = KindSentinel
	}
	s.minReplicas, s.replicaTimeout = uo.MinReplicas, uo.ReplicaTimeout
	return s, nil
}

// ParseURL turns a standalone redis:// or rediss:// URL into go-redis
// options (ParseStoreURL reads the other forms too) with
// maintenance notifications turned off (plain Redis servers do not know
// them) and ContextTimeoutEnabled set, so that a call ends with its
// context even while the server does not answer. Errors never repeat the
// URL's password.
func ParseURL(rawURL string) (*goredis.Options, error) {
	scheme, _, _ := strings.Cut(rawURL, "://")
	if s := strings.ToLower(scheme); s != "redis" && s != "rediss" {
		return nil, fmt.Errorf("open redis store: URL scheme %q, want redis or rediss", scheme)
	}
	ropts, err := goredis.ParseURL(rawURL)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // url.Error repeats the whole URL, password included
		}
		return nil, fmt.Errorf("open redis store %s: malformed URL: %v", redactURL(rawURL), err)
	}
	ropts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	ropts.ContextTimeoutEnabled = true
	ropts.MaxRetries = -1 // the store retries itself, knowing which answers a lost reply makes ambiguous
	return ropts, nil
}

// redactURL hides the user info of a URL, even one that does not parse.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "(unparsable URL)"
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = "xxxxx@" + rest[at+1:]
	}
	return scheme + "://" + rest
}

// Client returns the go-redis client the store uses.
func (s *Store) Client() goredis.UniversalClient { return s.client }

// Close implements cairn.Store. It closes the client only if Open made it.
// Closing twice is safe; every other method returns cairn.ErrClosed after.
func (s *Store) Close() error {
	if !s.guard.Close() || !s.owned {
		return nil
	}
	if err := s.client.Close(); err != nil {
		return fmt.Errorf("close redis store: %w", err)
	}
	return nil
}

// tag is the hash tag of a session: every key of the session holds it, so
// all of them hash to one Cluster slot.
func (s *Store) tag(id string) string { return "{" + s.opts.Namespace + ":" + id + "}" }

func (s *Store) metaKey(id string) string   { return s.prefix + s.tag(id) + ":meta" }
func (s *Store) eventsKey(id string) string { return s.prefix + s.tag(id) + ":events" }

// scriptKeys returns the KEYS of a session's scripts: its meta and events,
// and the namespace index and claim set unless the store is split.
func (s *Store) scriptKeys(id string) []string {
	if s.split {
		return []string{s.metaKey(id), s.eventsKey(id)}
	}
	return []string{s.metaKey(id), s.eventsKey(id), s.index, s.claims}
}

// now returns the store's clock in UTC.
func (s *Store) now() time.Time { return s.opts.Now().UTC() }

// nanos formats t as Unix nanoseconds for the scripts, "0" for the zero
// time (never), a time past 2262 as the last nanosecond an int64 holds.
func nanos(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(unixnano.Of(t), 10) // held at 2262, where nanoseconds end
}

// score is a session's score in the namespace index: its updated time in
// Unix microseconds, which a float64 holds exactly.
func score(t time.Time) int64 { return t.UnixMicro() }
