package rediscluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Sentinel is a Redis master with one replica, watched by one Sentinel,
// for the tests of the Sentinel URL form.
type Sentinel struct {
	Master, Replica, Sentinel *Node
	Name                      string // the master's name in the Sentinel
}

// URL returns the store URL of the Sentinel's master.
func (s *Sentinel) URL() string {
	return "redis://" + s.Sentinel.Addr + "/0?master_name=" + s.Name
}

// TestSentinel starts a Sentinel setup for one test and stops it when the
// test ends. It runs only when CAIRN_TEST_REDIS_CLUSTER is auto.
func TestSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	Auto(tb)
	dir := tb.TempDir()
	ctx := context.Background()
	s := &Sentinel{Name: "cairn"}
	var nodes []*Node
	tb.Cleanup(func() {
		for _, n := range nodes {
			_ = n.Kill()
		}
	})
	start := func(name string, args ...string) *Node {
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		n := &Node{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, dir: filepath.Join(dir, name)}
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		argv := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", n.dir, "--logfile", filepath.Join(n.dir, "redis.log")}, args...)
		if name == "sentinel" {
			conf := filepath.Join(n.dir, "sentinel.conf")
			if err := os.WriteFile(conf, []byte(fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 1000\n", s.Name, s.Master.Port, s.Name)), 0o644); err != nil {
				tb.Fatal(err)
			}
			argv = append([]string{conf, "--sentinel"}, argv...)
		}
		cmd := exec.Command("redis-server", argv...)
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		n.cmd, n.done = cmd, make(chan struct{})
		go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(n.done)
		nodes = append(nodes, n)
		if err := waitPing(ctx, n.Addr); err != nil {
			tb.Fatal(err)
		}
		return n
	}
	s.Master = start("master")
	s.Replica = start("replica", "--replicaof", "127.0.0.1", strconv.Itoa(s.Master.Port))
	s.Sentinel = start("sentinel")
	// Wait until the replica has synced and the Sentinel knows it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := client(s.Master.Addr)
		info, err := m.Info(ctx, "replication").Result()
		m.Close()
		sc := client(s.Sentinel.Addr)
		reps, serr := sc.Do(ctx, "sentinel", "replicas", s.Name).Slice()
		sc.Close()
		if err == nil && serr == nil && strings.Contains(info, ",state=online,") && len(reps) > 0 {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the Sentinel setup in %s did not become ready: %v %v", dir, err, serr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
