//go:build unix

package workertest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/rediscluster"
	"github.com/cairnhq/cairn/internal/testing/testenv"
)

var (
	throughput = flag.Bool("workertest.throughput", false, "measure sessions per second of 1, 2 and 4 workers")
	queued     = flag.Int("workertest.sessions", 200, "how many sessions TestWorkers_Throughput queues for each measurement")
)

func TestWorkers_Postgres(t *testing.T) { testWorkers(t, testenv.URL(t, testenv.Postgres)) }
func TestWorkers_Redis(t *testing.T)    { testWorkers(t, testenv.URL(t, testenv.Redis)) }
func TestWorkers_MongoDB(t *testing.T)  { testWorkers(t, testenv.URL(t, testenv.MongoDB)) }

// TestWorkers_RedisCluster runs the same test on a Redis Cluster of 3
// masters and 3 replicas (CAIRN_TEST_REDIS_CLUSTER), where the workers'
// claims list the waiting sessions and acquire them one by one.
func TestWorkers_RedisCluster(t *testing.T) { testWorkers(t, rediscluster.URL(t)) }

// TestWorkers_File runs the same test on a file store: three workers on
// one machine sharing one folder, with leases in the sessions' folders and
// the lock files beside it.
func TestWorkers_File(t *testing.T) { testWorkers(t, "file://"+filepath.Join(t.TempDir(), "sessions")) }

const (
	sessions  = 50
	leaseTTL  = 1500 * time.Millisecond
	stepDelay = 150 // ms of simulated model latency per step
)

// testWorkers queues 50 scripted runs, starts three workers of two slots
// each, SIGKILLs one while it runs sessions, SIGSTOPs another past its
// lease while it runs sessions and then lets it go on, and checks that
// every session completed exactly once, with no run and no step twice, and
// that the killed worker's sessions were finished by the others.
func testWorkers(t *testing.T, storeURL string) {
	e := newEnv(t, storeURL, stepDelay)
	ids := e.enqueue(sessions)
	st := e.openStore()
	if n := len(ids); n != sessions {
		t.Fatalf("queued %d sessions, want %d", n, sessions)
	}
	workers := []*workerProc{
		e.startWorker("w0", 2, leaseTTL),
		e.startWorker("w1", 2, leaseTTL),
		e.startWorker("w2", 2, leaseTTL),
	}
	killed, paused := workers[0], workers[1]

	// Kill w0 while it runs sessions, once a few sessions are done, at a
	// moment when one of them has at least two model calls to go.
	waitFor(t, "w0 to start a session after 8 completed", 60*time.Second, func() bool {
		return completed(t, st) >= 8 && slices.ContainsFunc(killed.running(t), func(id string) bool {
			return responses(t, st, id) < 2
		})
	})
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.wait()
	// What it left unfinished: sessions it claimed and did not log as
	// finished, less those it completed in the instant between its last
	// write and its log line. A write still on its way to the server when
	// it died may land just after: give it a moment first.
	time.Sleep(300 * time.Millisecond)
	var diedDone []string // completed by w0, which died before it could log it
	orphans := slices.DeleteFunc(killed.running(t), func(id string) bool {
		if status(t, st, id) == cairn.StatusCompleted {
			diedDone = append(diedDone, id)
			return true
		}
		return false
	})
	if len(orphans) == 0 {
		t.Error("w0 finished its sessions in the instant before the SIGKILL: nothing was orphaned")
	}
	t.Logf("SIGKILLed w0 while it ran %v", orphans)

	// Stop w1 while it runs a session, for twice its lease, then go on.
	waitFor(t, "w1 to run a session", 60*time.Second, func() bool { return len(paused.running(t)) > 0 })
	stalled := paused.running(t)
	if err := paused.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2*leaseTTL + 500*time.Millisecond) // the fault: a stall past the lease
	if err := paused.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGSTOPped w1 for %s while it ran %v", 2*leaseTTL+500*time.Millisecond, stalled)

	waitFor(t, "every session to complete", 90*time.Second, func() bool { return completed(t, st) == sessions })
	for _, w := range workers[1:] {
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := w.wait(); err != nil {
			t.Errorf("worker %s after SIGTERM: %v, want a clean exit", w.name, err)
		}
	}

	dups := checkHistories(t, st, ids)
	finishedBy := map[string][]logLine{}
	tokens := map[string][]int64{}
	lost := 0
	for _, w := range workers {
		for _, l := range w.lines(t) {
			switch l.msg {
			case "finished":
				finishedBy[l.session] = append(finishedBy[l.session], l)
			case "claimed":
				tokens[l.session] = append(tokens[l.session], l.token)
			case "lease lost; the session is another worker's now":
				if w == paused {
					lost++
				}
			}
		}
	}
	for _, id := range ids {
		want := 1
		if slices.Contains(diedDone, id) {
			want = 0 // its one finish was w0's last write
		}
		if f := finishedBy[id]; len(f) != want {
			t.Errorf("session %s was finished %d times by a living worker (%v), want %d; the workers' log lines for it:\n%s", id, len(f), f, want, sessionLog(t, workers, id))
		}
		toks := tokens[id]
		slices.Sort(toks)
		if len(slices.Compact(slices.Clone(toks))) != len(toks) {
			t.Errorf("session %s was claimed twice with one token: %v", id, tokens[id])
		}
	}
	for _, id := range orphans {
		f := finishedBy[id]
		if len(f) != 1 || f[0].worker == "w0" {
			t.Errorf("session %s of the killed worker: finished by %v, want another worker", id, f)
		}
	}
	t.Logf("%d sessions, 1 SIGKILL (%d sessions orphaned, all finished by others), 1 SIGSTOP past the lease (%d sessions stalled, %d lost-lease stops), %d duplicated steps",
		sessions, len(orphans), len(stalled), lost, dups)
}

// sessionLog returns every line of the workers' logs that names session
// id.
func sessionLog(t *testing.T, workers []*workerProc, id string) string {
	var out []string
	for _, w := range workers {
		b, err := os.ReadFile(w.log)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, id) {
				out = append(out, w.name+": "+line)
			}
		}
	}
	return strings.Join(out, "\n")
}

// checkHistories checks every session's history: one run, started once,
// the script's three model responses in order, two tool results with
// distinct calls, no interruption but a stop at the lease's validity,
// and run.finished completed last. It
// returns how many duplicated steps it found.
func checkHistories(t *testing.T, st cairn.Store, ids []string) int {
	dups, leaseStops := 0, 0
	defer func() {
		if leaseStops > 0 {
			t.Logf("%d run(s) stopped at their lease's validity (renewals too late) and were finished on a later claim", leaseStops)
		}
	}()
	for _, id := range ids {
		rec, err := st.Load(context.Background(), id, 0)
		if err != nil {
			t.Fatalf("load %s: %v", id, err)
		}
		count := map[cairn.Kind]int{}
		runs := map[string]bool{}
		calls := map[string]int{}
		var texts []string
		for _, e := range rec.Events {
			count[e.Kind]++
			if e.Kind != cairn.KindCustom {
				runs[e.Run] = true
			}
			v, err := e.Decode()
			if err != nil {
				t.Fatalf("%s seq %d: %v", id, e.Seq, err)
			}
			switch d := v.(type) {
			case *cairn.ToolResult:
				calls[d.CallID]++
			case *cairn.ModelResponse:
				texts = append(texts, d.Text)
			case *cairn.RunInterrupted:
				// A holder whose renewals came too late on a loaded
				// machine stops acting at its lease's validity, and
				// another worker finishes the run: allowed. Any other
				// interruption is not.
				if d.Reason == cairn.InterruptLease {
					count[cairn.KindRunInterrupted]--
					leaseStops++
				}
			}
		}
		for c, n := range calls {
			if n > 1 {
				dups += n - 1
				t.Errorf("session %s: tool call %s has %d results", id, c, n)
			}
		}
		if n := count[cairn.KindModelResponse]; n != 3 {
			dups += max(n-3, 0)
			t.Errorf("session %s: %d model responses, want 3 (%q)", id, n, texts)
		}
		switch {
		case count[cairn.KindRunStarted] != 1 || len(runs) != 1:
			t.Errorf("session %s: %d run.started and %d run IDs, want one run (interleaved runs?)", id, count[cairn.KindRunStarted], len(runs))
		case count[cairn.KindToolResult] != 2:
			t.Errorf("session %s: %d tool results, want 2", id, count[cairn.KindToolResult])
		case count[cairn.KindRunInterrupted] != 0:
			t.Errorf("session %s: %d run.interrupted other than lease_expired, want none (a fenced-out worker wrote?)", id, count[cairn.KindRunInterrupted])
		case count[cairn.KindRunFinished] != 1 || rec.Events[len(rec.Events)-1].Kind != cairn.KindRunFinished:
			t.Errorf("session %s: %d run.finished, want one, last", id, count[cairn.KindRunFinished])
		case texts[2] != "done":
			t.Errorf("session %s: final text %q, want done", id, texts[2])
		}
		if rec.Info.Status != cairn.StatusCompleted {
			t.Errorf("session %s: status %s, want completed", id, rec.Info.Status)
		}
	}
	return dups
}

// TestWorkers_Throughput measures how many queued sessions per second 1, 2
// and 4 worker processes (two slots each) complete on each shared store
// (PostgreSQL, Redis, a Redis Cluster of 3 masters and 3 replicas,
// MongoDB) and on a file store, with no simulated model latency: the cost
// of claiming, leasing, fenced appends and releasing. It ends with the
// ratio of the cluster's figures to the single Redis server's. Run with
// -workertest.throughput (and -run 'TestWorkers_Throughput/redis' for the
// two Redis deployments alone; -workertest.sessions sets how many sessions
// are queued, 200 by default).
func TestWorkers_Throughput(t *testing.T) {
	if !*throughput {
		t.Skip("run with -workertest.throughput to measure")
	}
	backends := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"postgres", func(t *testing.T) string { return testenv.URL(t, testenv.Postgres) }},
		{"redis", func(t *testing.T) string { return testenv.URL(t, testenv.Redis) }},
		{"redis-cluster", func(t *testing.T) string { return rediscluster.URL(t) }},
		{"mongodb", func(t *testing.T) string { return testenv.URL(t, testenv.MongoDB) }},
		{"file", func(t *testing.T) string { return "file://" + filepath.Join(t.TempDir(), "sessions") }},
	}
	n := *queued
	counts := []int{1, 2, 4}
	rates := map[string]float64{} // backend/workers -> sessions per second
	for _, b := range backends {
		for _, workers := range counts {
			t.Run(fmt.Sprintf("%s/workers=%d", b.name, workers), func(t *testing.T) {
				e := newEnv(t, b.url(t), 0)
				e.enqueue(n)
				st := e.openStore()
				start := time.Now()
				var procs []*workerProc
				for i := range workers {
					procs = append(procs, e.startWorker(fmt.Sprintf("w%d", i), 2, 15*time.Second))
				}
				waitFor(t, "every session to complete", 5*time.Minute, func() bool { return completed(t, st) == n })
				elapsed := time.Since(start)
				for _, p := range procs {
					_ = p.cmd.Process.Signal(syscall.SIGTERM)
					p.wait()
				}
				rate := float64(n) / elapsed.Seconds()
				rates[fmt.Sprintf("%s/%d", b.name, workers)] = rate
				t.Logf("%s, %d workers: %d sessions in %s: %.1f sessions/s", b.name, workers, n, elapsed.Round(time.Millisecond), rate)
			})
		}
	}
	for _, workers := range counts {
		single, cluster := rates[fmt.Sprintf("redis/%d", workers)], rates[fmt.Sprintf("redis-cluster/%d", workers)]
		if single > 0 && cluster > 0 {
			t.Logf("%d workers: Redis Cluster %.1f sessions/s, single Redis %.1f sessions/s: %.2f× the single server", workers, cluster, single, cluster/single)
		}
	}
}
