package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The kinds of deployment a URL names, as Kind reports them.
const (
	KindStandalone = "standalone"
	KindCluster    = "cluster"
	KindSentinel   = "sentinel"
)

// URLOptions is what a store URL says: the client to make and the store's
// own parameters. Exactly one of Standalone, Cluster and Failover is set.
type URLOptions struct {
	Kind       string // KindStandalone, KindCluster or KindSentinel
	Standalone *goredis.Options
	Cluster    *goredis.ClusterOptions
	Failover   *goredis.FailoverOptions
	// MinReplicas is the min_replicas parameter: how many replicas must
	// hold an append before it returns (0: do not wait). See the package
	// documentation, "Replication".
	MinReplicas int
	// ReplicaTimeout is the replica_timeout parameter: how long an append
	// waits for them (default DefaultReplicaTimeout).
	ReplicaTimeout time.Duration
}

// DefaultReplicaTimeout is how long an append waits for its replicas when
// the URL sets min_replicas but no replica_timeout.
const DefaultReplicaTimeout = 2 * time.Second

// ParseStoreURL reads a redis:// or rediss:// store URL of any of the three
// forms the package documentation describes (standalone, Redis Cluster,
// Sentinel) and the store's own parameters (min_replicas,
// replica_timeout). Every client it describes has go-redis's own retries
// off, ContextTimeoutEnabled set and maintenance notifications off, as
// ParseURL does for a standalone one. Errors never repeat the URL's
// password.
func ParseStoreURL(rawURL string) (*URLOptions, error) {
	scheme, _, _ := strings.Cut(rawURL, "://")
	if s := strings.ToLower(scheme); s != "redis" && s != "rediss" {
		return nil, fmt.Errorf("open redis store: URL scheme %q, want redis or rediss", scheme)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("open redis store %s: malformed URL: %s", redactURL(rawURL), fmt.Sprintf(format, a...))
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // url.Error repeats the whole URL, password included
		}
		return nil, bad("%v", err)
	}
	q := u.Query()
	o := &URLOptions{Kind: KindStandalone}
	if v, ok := take(q, "min_replicas"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, bad("min_replicas=%q: want a whole number of replicas, 0 or more", v)
		}
		o.MinReplicas = n
	}
	o.ReplicaTimeout = DefaultReplicaTimeout
	if v, ok := take(q, "replica_timeout"); ok {
		d, err := time.ParseDuration(v)
		if n, nerr := strconv.Atoi(v); nerr == nil {
			d, err = time.Duration(n)*time.Millisecond, nil
		}
		if err != nil || d <= 0 {
			return nil, bad("replica_timeout=%q: want a duration such as 500ms or 2s (a bare number is milliseconds)", v)
		}
		o.ReplicaTimeout = d
	}
	clusterFlag := false
	if v, ok := take(q, "cluster"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, bad("cluster=%q: want true or false", v)
		}
		clusterFlag = b
	}
	if q.Has("master_name") {
		if clusterFlag || q.Get("master_name") == "" {
			return nil, bad("master_name names a Sentinel master: it must not be empty, and does not go with cluster=true")
		}
		o.Kind = KindSentinel
	} else if clusterFlag || len(q["addr"]) > 0 {
		o.Kind = KindCluster
		if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
			return nil, bad("Redis Cluster has only database 0, the URL names %q", p)
		}
		u.Path = ""
	}
	u.RawQuery = q.Encode()
	clean := u.String()
	unwrap := func(err error) error {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			return ue.Err
		}
		return err
	}
	mn := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	// A WAIT may take the whole replica_timeout to answer: read for longer.
	readFor := func(d time.Duration) time.Duration {
		if o.MinReplicas > 0 && d >= 0 && d < o.ReplicaTimeout+time.Second {
			return max(d, o.ReplicaTimeout+time.Second, 3*time.Second)
		}
		return d
	}
	switch o.Kind {
	case KindCluster:
		c, err := goredis.ParseClusterURL(clean)
		if err != nil {
			return nil, bad("%v", unwrap(err))
		}
		c.MaintNotificationsConfig = mn
		c.ContextTimeoutEnabled = true
		c.MaxRetries = -1 // the store retries itself (see errors.go); redirects are still followed
		c.ReadTimeout = readFor(c.ReadTimeout)
		o.Cluster = c
	case KindSentinel:
		f, err := goredis.ParseFailoverURL(clean)
		if err != nil {
			return nil, bad("%v", unwrap(err))
		}
		f.ContextTimeoutEnabled = true
		f.MaxRetries = -1
		f.ReadTimeout = readFor(f.ReadTimeout)
		o.Failover = f
	default:
		s, err := ParseURL(clean)
		if err != nil {
			return nil, err
		}
		s.ReadTimeout = readFor(s.ReadTimeout)
		o.Standalone = s
	}
	return o, nil
}

// take removes the parameter key from q and returns its last value.
func take(q url.Values, key string) (string, bool) {
	vs, ok := q[key]
	if !ok {
		return "", false
	}
	q.Del(key)
	if len(vs) == 0 {
		return "", true
	}
	return vs[len(vs)-1], true
}

// client makes the client the options describe.
func (o *URLOptions) client() goredis.UniversalClient {
	switch o.Kind {
	case KindCluster:
		c := goredis.NewClusterClient(o.Cluster)
		// A cluster client sends a command again on another try of its
		// redirect loop when its reply was lost; for a script that may have
		// been applied the store must decide instead (see errors.go).
		c.OnNewNode(func(n *goredis.Client) { n.AddHook(lostReplyHook{}) })
		return c
	case KindSentinel:
		return goredis.NewFailoverClient(o.Failover)
	}
	return goredis.NewClient(o.Standalone)
}

// dial makes the client the options describe and pings the server; it
// refuses a standalone URL that reaches a Redis Cluster node. what names
// the store in errors.
func (o *URLOptions) dial(ctx context.Context, what string) (goredis.UniversalClient, error) {
	client := o.client()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		unavailable(&err)
		return nil, fmt.Errorf("open %s at %s: %w (is Redis running there, and are the URL's credentials right?)", what, o.where(), err)
	}
	if o.Kind == KindStandalone && clusterNode(ctx, client) {
		_ = client.Close()
		return nil, fmt.Errorf("open %s at %s: the server is a Redis Cluster node: %w", what, o.where(), ErrClusterNode)
	}
	return client, nil
}

// where names what the options connect to, for errors: the address of a
// standalone server, the seed nodes of a cluster, the Sentinel master.
func (o *URLOptions) where() string {
	switch o.Kind {
	case KindCluster:
		return "the Redis Cluster at " + strings.Join(o.Cluster.Addrs, ",")
	case KindSentinel:
		return fmt.Sprintf("Sentinel master %q (sentinels %s, db %d)", o.Failover.MasterName, strings.Join(o.Failover.SentinelAddrs, ","), o.Failover.DB)
	}
	return fmt.Sprintf("%s (db %d)", o.Standalone.Addr, o.Standalone.DB)
}

// Kind reports which kind of deployment the store talks to, from its
// client's type: KindCluster for a *goredis.ClusterClient or
// *goredis.Ring, KindSentinel for a client Open made from a Sentinel URL,
// else KindStandalone.
func (s *Store) Kind() string {
	if s.kind != "" {
		return s.kind
	}
	if s.split {
		return KindCluster
	}
	return KindStandalone
}

// Topology describes, in words, what the store is connected to: a
// standalone server, a cluster with its number of masters and replicas, or
// the master a Sentinel names; and the replicas an append waits for.
// `cairn doctor` prints it.
func (s *Store) Topology(ctx context.Context) (string, error) {
	var out string
	switch c := s.client.(type) {
	case *goredis.ClusterClient:
		shards, err := c.ClusterShards(ctx).Result()
		if err != nil {
			return "", fmt.Errorf("redis cluster shards: %w", err)
		}
		// A replica's health is "loading" until the node asked has heard
		// (through the cluster bus) that its sync is done: it is there,
		// and counted, but said apart.
		masters, replicas, syncing := 0, 0, 0
		for _, sh := range shards {
			for _, n := range sh.Nodes {
				switch {
				case n.Role == "master" && n.Health == "online":
					masters++
				case n.Role != "master" && n.Health == "online":
					replicas++
				case n.Role != "master" && n.Health == "loading":
					replicas++
					syncing++
				}
			}
		}
		out = fmt.Sprintf("Redis Cluster with %d masters and %d replicas online", masters, replicas)
		if syncing > 0 {
			out += fmt.Sprintf(" (%d of them still syncing)", syncing)
		}
	default:
		role, replicas, err := s.role(ctx)
		if err != nil {
			return "", err
		}
		kind := "standalone Redis"
		if s.Kind() == KindSentinel {
			kind = "Redis master through Sentinel"
		}
		out = fmt.Sprintf("%s (%s, %d replicas connected)", kind, role, replicas)
	}
	if s.minReplicas > 0 {
		out += fmt.Sprintf("; each append waits for min_replicas=%d (%s at most)", s.minReplicas, s.replicaTimeout)
	}
	return out, nil
}

// role reads INFO replication of a single server: its role and its
// connected replicas.
func (s *Store) role(ctx context.Context) (string, int, error) {
	info, err := s.client.Info(ctx, "replication").Result()
	if err != nil {
		return "", 0, fmt.Errorf("redis info replication: %w", err)
	}
	role, replicas := "master", 0
	for line := range strings.Lines(info) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "role":
			role = v
		case "connected_slaves":
			replicas, _ = strconv.Atoi(v)
		}
	}
	return role, replicas, nil
}

// clusterNode reports whether the server behind a single-server client is
// a Redis Cluster node (INFO cluster says cluster_enabled:1). A server
// that refuses INFO is taken for what the URL says.
func clusterNode(ctx context.Context, c goredis.UniversalClient) bool {
	info, err := c.Info(ctx, "cluster").Result()
	return err == nil && strings.Contains(info, "cluster_enabled:1")
}
