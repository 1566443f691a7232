package redis_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store/redis"
)

// TestParseStoreURL checks which client each URL form describes, the
// store's own parameters, and that go-redis's retries are off in all.
func TestParseStoreURL(t *testing.T) {
	cases := []struct {
		url, kind string
		addrs     []string
		replicas  int
		timeout   time.Duration
	}{
		{"redis://127.0.0.1:6379/0", redis.KindStandalone, []string{"127.0.0.1:6379"}, 0, redis.DefaultReplicaTimeout},
		{"redis://a:7000?addr=b:7001&addr=c:7002", redis.KindCluster, []string{"a:7000", "b:7001", "c:7002"}, 0, redis.DefaultReplicaTimeout},
		{"redis://a:7000/0?cluster=true&min_replicas=1", redis.KindCluster, []string{"a:7000"}, 1, redis.DefaultReplicaTimeout},
		{"rediss://u:p@a:7000?cluster=1&replica_timeout=500ms", redis.KindCluster, []string{"a:7000"}, 0, 500 * time.Millisecond},
		{"redis://s1:26379/2?master_name=mymaster&addr=s2:26379&min_replicas=2&replica_timeout=750", redis.KindSentinel, []string{"s1:26379", "s2:26379"}, 2, 750 * time.Millisecond},
		{"redis://127.0.0.1:6379/0?min_replicas=1&cluster=false", redis.KindStandalone, []string{"127.0.0.1:6379"}, 1, redis.DefaultReplicaTimeout},
	}
	for _, c := range cases {
		o, err := redis.ParseStoreURL(c.url)
		if err != nil {
			t.Errorf("ParseStoreURL(%s): %v", c.url, err)
			continue
		}
		var addrs []string
		retries := 0
		switch o.Kind {
		case redis.KindStandalone:
			addrs, retries = []string{o.Standalone.Addr}, o.Standalone.MaxRetries
			if !o.Standalone.ContextTimeoutEnabled {
				t.Errorf("%s: ContextTimeoutEnabled is off", c.url)
			}
		case redis.KindCluster:
			addrs, retries = o.Cluster.Addrs, o.Cluster.MaxRetries
			if !o.Cluster.ContextTimeoutEnabled {
				t.Errorf("%s: ContextTimeoutEnabled is off", c.url)
			}
		case redis.KindSentinel:
			addrs, retries = o.Failover.SentinelAddrs, o.Failover.MaxRetries
			if o.Failover.MasterName != "mymaster" || o.Failover.DB != 2 {
				t.Errorf("%s: master %q db %d, want mymaster db 2", c.url, o.Failover.MasterName, o.Failover.DB)
			}
		}
		if o.Kind != c.kind || strings.Join(addrs, ",") != strings.Join(c.addrs, ",") || retries != -1 ||
			o.MinReplicas != c.replicas || o.ReplicaTimeout != c.timeout {
			t.Errorf("ParseStoreURL(%s) = %s %v retries %d, min_replicas %d timeout %s; want %s %v retries -1, %d %s",
				c.url, o.Kind, addrs, retries, o.MinReplicas, o.ReplicaTimeout, c.kind, c.addrs, c.replicas, c.timeout)
		}
	}
	for _, bad := range []string{
		"redis://u:s3cret@a:7000/3?addr=b:7001",
		"redis://u:s3cret@a:7000?cluster=maybe",
		"redis://u:s3cret@a:7000?min_replicas=-1",
		"redis://u:s3cret@a:7000?replica_timeout=soon",
		"redis://u:s3cret@a:7000?master_name=m&cluster=true",
		"redis://u:s3cret@a:7000?master_name=",
		"redis://u:s3cret@a:7000?addr=b:7001&no_such_option=1",
	} {
		_, err := redis.ParseStoreURL(bad)
		if err == nil {
			t.Errorf("ParseStoreURL(%s) succeeded", bad)
		} else if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "malformed URL") {
			t.Errorf("ParseStoreURL(%s): %q, want a malformed URL error without the password", bad, err)
		}
	}
}
