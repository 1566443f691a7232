package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testing/rediscluster"
)

// TestCLI_RedisCluster runs the commands against a local Redis Cluster
// through its URL: run and continue, doctor (which names the cluster),
// the worker on a queued run, sessions copy both ways, cairn.toml's
// [connections] with min_replicas, and a single-server URL on a cluster node, refused with a
// hint naming the cluster form.
func TestCLI_RedisCluster(t *testing.T) {
	cl := rediscluster.Test(t, 3)
	u := cl.URL()
	c := newCLIEnv(t)
	if out, errb, code := c.run("--store", u, "run", "--session", "rc1", "hello cluster"); code != 0 || !strings.Contains(out, "hello cluster") {
		t.Fatalf("run: exit %d\n%s%s", code, out, errb)
	}
	if out, errb, code := c.run("--store", u, "run", "--session", "rc1", "again"); code != 0 || !strings.Contains(out, "hello cluster") {
		t.Fatalf("run on the saved session: exit %d\n%s%s", code, out, errb)
	}
	// The node doctor asks learns of the replicas' sync through the
	// cluster bus, a moment after the cluster is healthy: ask again a few
	// times.
	var out, errb string
	var code int
	within(30*time.Second, 500*time.Millisecond, func() bool {
		out, errb, code = c.run("--store", u+"&min_replicas=1", "doctor")
		return strings.Contains(out, "3 masters and 3 replicas")
	})
	if code != 0 || !strings.Contains(out, "Redis Cluster with 3 masters and 3 replicas") || !strings.Contains(out, "min_replicas=1") {
		t.Errorf("doctor: exit %d\n%s%s\nwant the cluster's masters and replicas named", code, out, errb)
	}
	seed, _, _ := strings.Cut(u, "?")
	out, errb, code = c.run("--store", seed+"/0", "run", "--session", "rc2", "x")
	if code == 0 || !strings.Contains(errb, "Redis Cluster") || !strings.Contains(errb, "addr=") {
		t.Errorf("run through a single-server URL on a cluster node: exit %d\n%s%s\nwant a refusal naming the cluster URL form", code, out, errb)
	}
	if out, errb, code := c.run("--store", u, "run", "--detach", "--session", "q1", "queued"); code != 0 {
		t.Fatalf("run --detach: exit %d\n%s%s", code, out, errb)
	}
	w := c.command("--store", u, "worker", "--poll", "100ms")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	done := within(30*time.Second, 100*time.Millisecond, func() bool {
		out, _, _ := c.run("--store", u, "--json", "sessions", "show", "q1")
		return strings.Contains(out, `"status": "completed"`) || strings.Contains(out, `"status":"completed"`)
	})
	_ = w.Process.Signal(os.Interrupt)
	_ = w.Wait()
	if !done {
		t.Errorf("the worker on the cluster did not complete the queued run q1")
	}
	db := "sqlite://" + filepath.Join(c.dir, "copy.db")
	if out, errb, code := c.run("sessions", "copy", "--from", u, "--to", db); code != 0 || !strings.Contains(out+errb, "copied 2") {
		t.Errorf("sessions copy from the cluster: exit %d\n%s%s", code, out, errb)
	}
	toml := "[persistence]\nconnection = \"cl\"\n\n[connections.cl]\nurl = \"" + u + "&min_replicas=1\"\n"
	c.writeFile("cairn.toml", toml)
	if out, errb, code := c.run("sessions", "copy", "--from", db, "--to", u+"&min_replicas=1"); code != 0 || !strings.Contains(out+errb, "skipped 2 already there") {
		t.Errorf("sessions copy back to the cluster: exit %d\n%s%s\nwant both skipped, already there", code, out, errb)
	}
	if out, errb, code := c.run("sessions", "list"); code != 0 || !strings.Contains(out, "rc1") || !strings.Contains(out, "q1") {
		t.Errorf("sessions list through cairn.toml's [connections.cl]: exit %d\n%s%s", code, out, errb)
	}
}
