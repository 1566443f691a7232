package linearize

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/cairnhq/cairn/internal/testing/fault"
)

// plan is the size of one backend's run.
type plan struct {
	sessions int           // sessions the clients share
	clients  int           // clients at once
	run      time.Duration // how long the clients run …
	ops      int           // … unless the history holds this many calls first
	ttl      time.Duration // the leases' TTL
	timeout  time.Duration // each call's deadline
}

func planFor(name string) plan {
	p := plan{sessions: 2, clients: 4, run: 5 * time.Second, ops: 3000, ttl: 300 * time.Millisecond, timeout: time.Second}
	if name == "memory" {
		p.ttl = 20 * time.Millisecond // no faults: short leases so that some expire
	}
	if isLong() {
		// Many sessions: each is checked on its own, and the calls of
		// unknown outcome of one session are what the search grows with.
		p.sessions, p.clients, p.run, p.ops = 32, 6, 2*time.Minute, 40000
		if name == "mongodb" {
			// Each outage costs MongoDB's driver up to a second, so a
			// third of its calls during faults get no answer: spread
			// over 128 sessions, each session's history keeps few
			// enough for the checker to decide it.
			p.sessions = 128
		}
	}
	return p
}

// checkTimeout bounds each try of the checker.
func checkTimeout() time.Duration {
	if isLong() {
		return 10 * time.Minute
	}
	return time.Minute
}

// checkHeap bounds the checker's memory: each call of unknown outcome in a
// session doubles the orders to try, and the long run has the more of
// them (the machines this runs on have 24 GiB).
func checkHeap() uint64 {
	if isLong() {
		return 12 << 30
	}
	return 2 << 30
}

// more reports whether the clients should go on.
func (p plan) more(h *History, begin time.Time) bool {
	return time.Since(begin) < p.run && h.Len() < p.ops
}

// faults counts what a run injected.
type faults struct {
	mu     sync.Mutex
	counts map[string]int
}

func (f *faults) add(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts = map[string]int{}
	}
	f.counts[kind]++
}

func (f *faults) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.counts) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(f.counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", f.counts[k], k))
	}
	return strings.Join(parts, ", ")
}

func (f *faults) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.counts {
		n += c
	}
	return n
}

// TestLinearizable runs concurrent clients on each backend while faults
// are injected, and checks their history against Model: TCP cuts, stalls
// and delays between the clients and the server for postgres, redis and
// mongodb; SIGKILL and SIGSTOP of the client processes for file and
// sqlite; none for memory. The default run gives each backend 5 s of
// four clients on two sessions; -long (CAIRN_LINEARIZE_LONG=1) gives it
// 2 min (or 40,000 calls) of six clients on 32 sessions (128 on mongodb).
func TestLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs clients against every backend")
	}
	for _, name := range []string{"memory", "file", "sqlite", "postgres", "redis", "mongodb"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := fault.NewBackend(t, name)
			p := planFor(name)
			h := &History{}
			seed := uint64(time.Now().UnixNano())
			t.Logf("%s: seed %d, %d clients on %d sessions for %s (at most %d operations), lease TTL %s", name, seed, p.clients, p.sessions, p.run, p.ops, p.ttl)
			sessions := setup(t, b, p, h)
			var f faults
			begin := time.Now()
			switch {
			case b.Server():
				runProxied(t, b, p, h, sessions, seed, &f)
			case name == "memory":
				runInProcess(t, b, b.URL, p, h, sessions, seed, nil)
			default:
				runProcesses(t, b, p, h, sessions, seed, &f)
			}
			ran := time.Since(begin)
			_, st := h.Operations(Whole)
			t.Logf("%s: checking %d operations, %d of unknown outcome", name, st.Ops, st.Unknown)
			v := h.Check(checkTimeout(), checkHeap(), outDir(t))
			report(t, name, v, &f, ran)
		})
	}
}

// setup creates the sessions, recording the creates.
func setup(t *testing.T, b *fault.Backend, p plan, h *History) []string {
	st := b.Direct(t)
	c := &Client{ID: 0, Store: st, Rec: h, Rand: rand.New(rand.NewPCG(1, 2)), Timeout: 30 * time.Second}
	var ids []string
	for i := range p.sessions {
		id := fmt.Sprintf("lin-%d", i)
		c.create(t.Context(), id)
		ids = append(ids, id)
	}
	return ids
}

// runInProcess runs p.clients clients on stores opened at url for p.run
// or until the history holds p.ops calls. started, if not nil, is called
// once the stores are open.
func runInProcess(t *testing.T, b *fault.Backend, url string, p plan, h *History, sessions []string, seed uint64, started func()) {
	var clients []*Client
	for i := range p.clients {
		st := b.Open(t, url)
		clients = append(clients, &Client{ID: i + 1, Store: st, Sessions: sessions, Rec: h, Rand: rand.New(rand.NewPCG(seed, uint64(i))), TTL: p.ttl, Timeout: p.timeout})
	}
	if started != nil {
		started()
	}
	begin := time.Now()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for p.more(h, begin) {
				c.Step(t.Context())
			}
		})
	}
	wg.Wait()
}

// runProxied runs the clients through a proxy that a fault loop cuts,
// stalls and delays until they are done.
func runProxied(t *testing.T, b *fault.Backend, p plan, h *History, sessions []string, seed uint64, f *faults) {
	px := fault.StartProxy(t, b.URL)
	done := make(chan struct{})
	var wg sync.WaitGroup
	runInProcess(t, b, fault.QuickMongo(px.URL(b.URL)), p, h, sessions, seed, func() {
		pace := 30 * time.Millisecond
		if b.Name == "mongodb" {
			// Each outage costs the MongoDB driver up to a second (server
			// selection) and FerretDB is slow to serve: fewer faults, or the
			// run would be nothing but faults.
			pace = 300 * time.Millisecond
		}
		wg.Go(func() { injectNetwork(px, rand.New(rand.NewPCG(seed, 99)), pace, done, f) })
	})
	close(done)
	wg.Wait()
	px.Heal()
	s := px.Stats()
	t.Logf("%s proxy: %d connections, %d reset, %d chunks held by a stall dropped by a cut", b.Name, s.Conns, s.Reset, s.Dropped)
}

// injectNetwork cuts, stalls and delays the proxy at random until done,
// the first within pace, then one every pace to 8×pace: cuts of 0–80 ms, stalls of 0.1–1.5 s
// (some longer than a call's deadline: the call gives up and its bytes
// reach the server later), and 1–20 ms of latency for a while.
func injectNetwork(px *fault.Proxy, rng *rand.Rand, pace time.Duration, done <-chan struct{}, f *faults) {
	wait := func(d time.Duration) bool {
		select {
		case <-done:
			return false
		case <-time.After(d):
			return true
		}
	}
	defer px.Heal()
	// The first fault comes within pace: the clients of a fast backend can
	// be through their operations in under 200 ms, and a run without a
	// fault checks nothing of the seams it is for.
	next := time.Duration(rng.Int64N(int64(pace)))
	for ; wait(next); next = pace + time.Duration(rng.Int64N(int64(7*pace))) {
		switch r := rng.IntN(10); {
		case r < 6:
			px.Cut()
			f.add("cuts")
			ok := wait(time.Duration(rng.IntN(80)) * time.Millisecond)
			px.Heal()
			if !ok {
				return
			}
		case r < 9:
			d := time.Duration(100+rng.IntN(1400)) * time.Millisecond
			px.Stall(d)
			f.add("stalls")
			if !wait(d) {
				return
			}
		default:
			px.Delay(time.Duration(1+rng.IntN(20)) * time.Millisecond)
			f.add("delays")
			ok := wait(time.Duration(100+rng.IntN(300)) * time.Millisecond)
			px.Delay(0)
			if !ok {
				return
			}
		}
	}
}

// runProcesses runs each client in a process of its own (this test binary,
// in child mode) and SIGKILLs or SIGSTOPs one at random moments; a killed
// client is replaced by a new one.
func runProcesses(t *testing.T, b *fault.Backend, p plan, h *History, sessions []string, seed uint64, f *faults) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 98))
	next := 0
	procs := map[int]*clientProc{}
	start := func() {
		next++
		cfg, _ := json.Marshal(childConfig{URL: b.URL, NS: b.NS, Sessions: sessions, Client: next, Seed: seed, TTL: p.ttl, Timeout: p.timeout})
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+string(cfg))
		procs[next] = startClient(t, cmd, next, h)
	}
	for range p.clients {
		start()
	}
	begin := time.Now()
	for p.more(h, begin) {
		time.Sleep(time.Duration(20+rng.IntN(150)) * time.Millisecond)
		ids := slices.Sorted(maps.Keys(procs))
		id := ids[rng.IntN(len(ids))]
		cp := procs[id]
		if rng.IntN(4) == 0 {
			cp.p.Stop()
			f.add("SIGSTOPs")
			time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
			cp.p.Cont()
			continue
		}
		cp.p.Kill()
		f.add("SIGKILLs")
		cp.finish(t)
		delete(procs, id)
		start()
	}
	for _, cp := range procs {
		cp.stdin.Close() // ends the client's loop after its current call
		cp.finish(t)
	}
}

// clientProc is a client process and the reading of its stream.
type clientProc struct {
	p      *fault.Process
	id     int
	h      *History
	stdin  io.Closer
	stdout io.Closer
	read   chan struct{}
}

func startClient(t *testing.T, cmd *exec.Cmd, id int, h *History) *clientProc {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, w := io.Pipe() // closed by finish once the process has ended
	cmd.Stdout = w
	cp := &clientProc{id: id, h: h, stdin: stdin, stdout: w, read: make(chan struct{})}
	cp.p = fault.Start(t, cmd)
	go func() {
		defer close(cp.read)
		_, _ = ReadStream(out, h)
	}()
	return cp
}

// finish waits for the process to end and its stream to be read, and ends
// its open calls as unknown: a killed process may have had a call on its
// way to the store.
func (cp *clientProc) finish(t *testing.T) {
	e := cp.p.Wait()
	cp.stdout.Close()
	<-cp.read
	cp.h.Abandon(cp.id, time.Now().UnixNano())
	if e.Signal == 0 && e.Code != 0 {
		t.Errorf("client process %d: %s", cp.id, e)
	}
	if e.Signal == syscall.SIGKILL {
		return
	}
	if strings.Contains(e.Stderr, "DATA RACE") || strings.Contains(e.Stderr, "panic") {
		t.Errorf("client process %d:\n%s", cp.id, e.Stderr)
	}
}

// outDir is where a visualization of a history that is not linearizable
// goes: CAIRN_LINEARIZE_OUT, or a folder in the system's temporary one that
// outlives the test.
func outDir(t *testing.T) string {
	d := os.Getenv("CAIRN_LINEARIZE_OUT")
	if d == "" {
		d = filepath.Join(os.TempDir(), "cairn-linearize")
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Log(err)
		return ""
	}
	return d
}

// report logs a run's figures and fails the test on a violation.
func report(t *testing.T, name string, v Verdict, f *faults, ran time.Duration) {
	t.Helper()
	t.Logf("%s: %d operations checked (%d of unknown outcome; %d of unknown outcome left out, reduction %d), results %v, kinds %v; faults: %s; ran %s, checked in %s: %s",
		name, v.Stats.Ops, v.Stats.Unknown, v.Stats.Unseen, v.Level, v.Stats.Results, v.Stats.ByKind, f, ran.Round(time.Millisecond), v.Took.Round(time.Millisecond), v.Result)
	if testing.Verbose() {
		for _, e := range slices.Sorted(maps.Keys(v.Stats.Outages)) {
			t.Logf("%s: %d unknown outcome(s) with the outage: %s", name, v.Stats.Outages[e], e)
		}
	}
	for _, e := range slices.Sorted(maps.Keys(v.Stats.NotOutages)) {
		t.Logf("%s: %d unknown outcome(s) with an error that is not an outage: %s", name, v.Stats.NotOutages[e], e)
	}
	switch v.Result {
	case porcupine.Ok:
	case porcupine.Illegal:
		t.Errorf("%s: the history is not linearizable (%s, %s)", name, v.Visualization, v.Listing)
		for _, msg := range v.Illegal {
			t.Errorf("%s", msg)
		}
	default:
		t.Errorf("%s: the checker did not decide in time (%s), at reduction %d", name, v.Result, v.Level)
		for _, msg := range v.Reduced {
			t.Errorf("at reduction %d, not linearizable (unless the calls of unknown outcome left out explain it): %s", v.ReducedLevel, msg)
		}
	}
	if f != nil && f.total() == 0 && name != "memory" {
		t.Errorf("%s: no fault was injected", name)
	}
}
