// Package rediscluster starts a small Redis Cluster on loopback ports for
// tests: masters and their replicas, each a redis-server process in a
// folder of its own, with no persistence and a short node timeout (1 s), so
// that a replica takes over a killed master within seconds.
//
// Tests find their cluster through CAIRN_TEST_REDIS_CLUSTER: "auto" starts
// one per test binary (Shared), a redis:// URL names a running one. Locally
// a missing variable skips the test with a message naming it; under CI
// (CI=true) it fails the test, as testenv.URL does for the other servers.
package rediscluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Env is the variable that names the test cluster: "auto", or a URL.
const Env = "CAIRN_TEST_REDIS_CLUSTER"

// Node is one redis-server of a Cluster.
type Node struct {
	Addr string // 127.0.0.1:PORT
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// Cluster is a running local Redis Cluster.
type Cluster struct {
	Nodes    []*Node
	replicas int // per master
	dir      string
	own      bool // Stop removes dir
}

// Start starts masters masters with replicas replicas each under dir (a
// fresh temporary folder when dir is ""), creates the cluster with
// redis-cli --cluster create, and waits until every node says it is ok and
// every replica has synced. On an error it stops what it started.
func Start(ctx context.Context, dir string, masters, replicas int) (*Cluster, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("start a Redis Cluster: %w", err)
	}
	c := &Cluster{dir: dir, replicas: replicas}
	if dir == "" {
		d, err := os.MkdirTemp("", "rediscluster")
		if err != nil {
			return nil, err
		}
		c.dir, c.own = d, true
	}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	for i := range masters * (1 + replicas) {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		n := &Node{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, dir: filepath.Join(c.dir, strconv.Itoa(i))}
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
		if err := n.start(); err != nil {
			return nil, err
		}
	}
	for _, n := range c.Nodes {
		if err := waitPing(ctx, n.Addr); err != nil {
			return nil, err
		}
	}
	args := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// start runs the node's redis-server.
func (n *Node) start() error {
	cmd := exec.Command("redis-server",
		"--port", strconv.Itoa(n.Port), "--bind", "127.0.0.1",
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		// The default replica validity factor (10) stays: a replica that
		// has never synced (a killed master started again and still
		// loading its new master's data) must not be promoted when that
		// master stalls for a node timeout, or the slot's data is gone.
		"--cluster-node-timeout", "1000",
		"--save", "", "--appendonly", "no",
		"--dir", n.dir, "--logfile", filepath.Join(n.dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server on port %d: %w", n.Port, err)
	}
	n.cmd, n.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(n.done)
	return nil
}

// freePort returns a loopback port where nothing listens, whose cluster bus
// port (the port plus 10000) is free too.
func freePort() (int, error) {
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if port >= 55000 {
			ln.Close()
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		ln.Close()
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, errors.New("no free pair of loopback ports for a cluster node")
}

// Client returns a plain client on the node (no cluster redirects).
func (n *Node) Client() *goredis.Client { return client(n.Addr) }

// client returns a plain client on one node.
func client(addr string) *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
}

func waitPing(ctx context.Context, addr string) error {
	c := client(addr)
	defer c.Close()
	var err error
	for range 100 {
		if err = c.Ping(ctx).Err(); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redis-server at %s did not answer: %w", addr, err)
}

// WaitHealthy waits (up to 30 s) until every running node says
// cluster_state:ok, every slot is served, and every replica's link to its
// master is up; and, when every node runs, until every master has all its
// replicas online (a node started again has rejoined as a replica and
// synced).
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var why string
	for {
		if why = c.unhealthy(ctx); why == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Redis Cluster in %s is not healthy: %s", c.dir, why)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// unhealthy says why the cluster is not healthy yet, or "".
func (c *Cluster) unhealthy(ctx context.Context) string {
	all := true
	for _, n := range c.Nodes {
		all = all && n.Running()
	}
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		cl := client(n.Addr)
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			cl.Close()
			return n.Addr + ": " + err.Error()
		}
		repl, err := cl.Info(ctx, "replication").Result()
		cl.Close()
		if err != nil {
			return n.Addr + ": " + err.Error()
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return n.Addr + " says its cluster is not ok"
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return n.Addr + " is a replica whose link to its master is down"
		}
		if all && strings.Contains(repl, "role:master") && strings.Count(repl, ",state=online,") < c.replicas {
			return n.Addr + " is a master without all its replicas online"
		}
		if all && strings.Contains(repl, "role:master") && !streaming(ctx, n, c.replicas) {
			return n.Addr + " is a master whose replicas do not receive its writes yet"
		}
	}
	return ""
}

// streaming reports whether every replica of master n receives its writes:
// a write to one of its slots, then WAIT for them (200 ms). After a
// diskless full sync a master calls the replica online but holds its
// stream until the replica's first acknowledgement that it sees, up to a
// second later; a master killed in that second takes every write since the
// sync with it, the session's creation included, as one test run showed.
func streaming(ctx context.Context, n *Node, replicas int) bool {
	cl := client(n.Addr)
	defer cl.Close()
	shards, err := cl.ClusterShards(ctx).Result()
	if err != nil {
		return false
	}
	var owned []goredis.SlotRange
	for _, s := range shards {
		for _, sn := range s.Nodes {
			if sn.Port == int64(n.Port) && sn.Role == "master" {
				owned = s.Slots
			}
		}
	}
	for i := range 1000 { // a key whose slot n serves
		key := "rediscluster:probe:{" + strconv.Itoa(i) + "}"
		slot, err := cl.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			return false
		}
		for _, r := range owned {
			if r.Start <= slot && slot <= r.End {
				var wait *goredis.Cmd
				_, err := cl.Pipelined(ctx, func(p goredis.Pipeliner) error {
					p.Set(ctx, key, "x", 5*time.Second)
					wait = p.Do(ctx, "wait", replicas, 200)
					return nil
				})
				got, werr := wait.Int()
				return err == nil && werr == nil && got >= replicas
			}
		}
	}
	return false
}

// URL returns the cluster's store URL: one node in the host, the others
// in addr parameters.
func (c *Cluster) URL() string {
	var running []string
	for _, n := range c.Nodes {
		if n.Running() {
			running = append(running, n.Addr)
		}
	}
	if len(running) == 0 {
		return ""
	}
	u := "redis://" + running[0]
	for i, a := range running[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + a
	}
	return u
}

// Running reports whether the node's process is alive.
func (n *Node) Running() bool {
	if n.done == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Kill sends the node SIGKILL and waits for it to be gone.
func (n *Node) Kill() error {
	if !n.Running() {
		return nil
	}
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-n.done
	return nil
}

// Pause stops the node's process with SIGSTOP: it keeps its sockets but
// reads and answers nothing, as a replica that falls behind does.
func (n *Node) Pause() error {
	if !n.Running() {
		return fmt.Errorf("pause redis-server on port %d: not running", n.Port)
	}
	return pause(n.cmd.Process)
}

// Resume lets a paused node go on (SIGCONT).
func (n *Node) Resume() error {
	if !n.Running() {
		return nil
	}
	return resume(n.cmd.Process)
}

// Restart starts a stopped node again, on its port and folder: it rejoins
// the cluster from its nodes.conf, as a replica if another took its place.
func (n *Node) Restart(ctx context.Context) error {
	if n.Running() {
		return nil
	}
	if err := n.start(); err != nil {
		return err
	}
	return waitPing(ctx, n.Addr)
}

// WaitFailover waits until a node other than old serves key as master:
// after old was killed, until a replica has taken over its slots. The
// cluster looks healthy for a moment after a kill, before the others
// notice it; a master restarted in that moment, without persistence,
// would come back empty and still a master, and its replicas would copy
// the empty data set.
func (c *Cluster) WaitFailover(ctx context.Context, key string, old *Node) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		m, err := c.MasterOf(ctx, key)
		if err == nil && m != old {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no replica took over from %s: %v", old.Addr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ReplicaOf returns a replica of master m, as m's INFO replication names
// it.
func (c *Cluster) ReplicaOf(ctx context.Context, m *Node) (*Node, error) {
	cl := client(m.Addr)
	defer cl.Close()
	info, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return nil, fmt.Errorf("replicas of %s: %w", m.Addr, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "slave") {
			continue
		}
		_, fields, _ := strings.Cut(strings.TrimSpace(line), ":")
		for _, f := range strings.Split(fields, ",") {
			if p, ok := strings.CutPrefix(f, "port="); ok {
				for _, n := range c.Nodes {
					if strconv.Itoa(n.Port) == p {
						return n, nil
					}
				}
			}
		}
	}
	return nil, fmt.Errorf("%s names no replica of its own", m.Addr)
}

// ReplicationLag returns how many bytes of master m's replication stream
// its replicas have not acknowledged yet: its master_repl_offset less the
// smallest offset a replica acknowledged (INFO replication).
func (c *Cluster) ReplicationLag(ctx context.Context, m *Node) (int64, error) {
	cl := client(m.Addr)
	defer cl.Close()
	info, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return 0, fmt.Errorf("replication of %s: %w", m.Addr, err)
	}
	var master int64
	acked := int64(-1)
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
			master, _ = strconv.ParseInt(v, 10, 64)
		}
		if !strings.HasPrefix(line, "slave") {
			continue
		}
		for _, f := range strings.Split(line, ",") {
			if v, ok := strings.CutPrefix(f, "offset="); ok {
				if o, err := strconv.ParseInt(v, 10, 64); err == nil && (acked < 0 || o < acked) {
					acked = o
				}
			}
		}
	}
	if acked < 0 {
		return 0, fmt.Errorf("%s names no replica of its own", m.Addr)
	}
	return master - acked, nil
}

// MasterOf returns the node that serves key as master now, asking the
// running nodes.
func (c *Cluster) MasterOf(ctx context.Context, key string) (*Node, error) {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		cl := client(n.Addr)
		slot, err := cl.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			cl.Close()
			continue
		}
		shards, err := cl.ClusterShards(ctx).Result()
		cl.Close()
		if err != nil {
			continue
		}
		for _, s := range shards {
			owns := false
			for _, r := range s.Slots {
				owns = owns || r.Start <= slot && slot <= r.End
			}
			if !owns {
				continue
			}
			for _, sn := range s.Nodes {
				if sn.Role != "master" || sn.Health != "online" {
					continue
				}
				for _, m := range c.Nodes {
					if int64(m.Port) == sn.Port {
						return m, nil
					}
				}
			}
		}
	}
	return nil, fmt.Errorf("no running node knows the master of %q", key)
}

// Stop ends every node and removes the cluster's folder if Start made it.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		if n.Running() {
			_ = resume(n.cmd.Process) // a paused node ends too
			_ = n.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-n.done:
			case <-time.After(5 * time.Second):
				_ = n.Kill()
			}
		}
	}
	if c.own {
		_ = os.RemoveAll(c.dir)
	}
}

var (
	sharedMu  sync.Mutex
	shared    *Cluster
	sharedErr error
)

// URL returns the URL of the test cluster CAIRN_TEST_REDIS_CLUSTER names:
// with "auto", a cluster of 3 masters and 3 replicas that this test binary
// starts at the first call and StopShared stops. When the variable is empty
// the test is skipped, or failed under CI.
func URL(tb testing.TB) string {
	tb.Helper()
	v := os.Getenv(Env)
	switch {
	case v == "" && os.Getenv("CI") == "true":
		tb.Fatalf("%s is not set: CI must run the Redis Cluster tests (see .ci/run)", Env)
	case v == "":
		tb.Skipf("%s is not set: set it to auto (redis-server and redis-cli on the PATH) or to a cluster's URL to run these tests", Env)
	case v != "auto":
		return v
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = Start(context.Background(), "", 3, 1)
	}
	if sharedErr != nil {
		tb.Fatal(sharedErr)
	}
	return shared.URL()
}

// Auto reports whether CAIRN_TEST_REDIS_CLUSTER asks the tests to start
// clusters themselves, as a failover test needs (it kills nodes), and skips
// the test otherwise (failing it under CI).
func Auto(tb testing.TB) {
	tb.Helper()
	if os.Getenv(Env) == "auto" {
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s is not auto: CI must run the Redis Cluster failover tests (see .ci/run)", Env)
	}
	tb.Skipf("%s is not auto: set it to auto (redis-server and redis-cli on the PATH) to run the failover tests", Env)
}

// StopShared stops the cluster URL started, if it did; call it from
// TestMain after m.Run.
func StopShared() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		shared.Stop()
		shared = nil
	}
}

// Test starts a cluster of its own for one test (a test that kills nodes
// must not share one), with masters masters and one replica each, and
// stops it when the test ends. It runs only when CAIRN_TEST_REDIS_CLUSTER
// is auto: skipped otherwise, failed under CI.
func Test(tb testing.TB, masters int) *Cluster {
	tb.Helper()
	Auto(tb)
	c, err := Start(context.Background(), tb.TempDir(), masters, 1)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	tb.Cleanup(func() {
		if tb.Failed() {
			c.logTails(tb)
		}
	})
	return c
}

// logTails logs the last lines of every node's log: what a failed test's
// cluster did last (failovers, resyncs, a port that could not be bound).
func (c *Cluster) logTails(tb testing.TB) {
	for _, n := range c.Nodes {
		b, err := os.ReadFile(filepath.Join(n.dir, "redis.log"))
		if err != nil {
			tb.Logf("node %s: %v", n.Addr, err)
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		tb.Logf("node %s (running: %v), the last lines of its log:\n%s", n.Addr, n.Running(), strings.Join(lines[max(0, len(lines)-25):], "\n"))
	}
}
