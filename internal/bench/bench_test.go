package bench

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"

	"github.com/cairnhq/cairn/internal/testing/testenv"
)

// tiny are settings small enough for a test: every measurement runs, on
// short histories.
var tiny = settings{lengths: []int{10, 30}, samples: 25, resume: []int{20, 40}, resumeRep: 1, cpuOps: 30, perWriter: 5, rounds: 1, steps: 20,
	longTurns: 30, openTurns: []int{3, 30}, openRep: 1, bytesTurns: 12}

// measureTiny measures the store at url, with dir for its files, at the
// tiny sizes.
func measureTiny(t *testing.T, url, dir string) Result {
	t.Helper()
	b, err := openBackend(t.Context(), url, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
	var res Result
	if err := measure(t.Context(), b, tiny, &res, func(string) {}, true); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestMeasure_LocalBackends(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"memory:", "file://" + filepath.Join(dir, "file"), "sqlite://" + filepath.Join(dir, "sqlite", "cairn.db")} {
		name := backendName(u)
		t.Run(name, func(t *testing.T) {
			res := measureTiny(t, u, dir)
			for _, n := range []string{"10", "30"} {
				if res.AppendP50[n] <= 0 || res.AppendP99[n] < res.AppendP50[n] {
					t.Errorf("append at %s: p50 %v p99 %v, want 0 < p50 <= p99", n, res.AppendP50[n], res.AppendP99[n])
				}
			}
			for _, n := range []string{"20", "40"} {
				if res.ResumeMS[n] <= 0 || res.ResumeFloorMS[n] <= 0 {
					t.Errorf("resume of %s: %v ms, floor %v ms; want both > 0", n, res.ResumeMS[n], res.ResumeFloorMS[n])
				}
			}
			if res.Concurrent8vs1 <= 0 || res.Concurrent64vs1 <= 0 || res.Throughput64 <= 0 || res.EventJSONBytes < 1000 {
				t.Errorf("8 vs 1 = %v, event JSON %d bytes; want > 0 and about 1 KB", res.Concurrent8vs1, res.EventJSONBytes)
			}
			checkCost(t, res)
			checkLong(t, name, res)
			if name == "memory" {
				if res.BytesPerEvent != nil {
					t.Errorf("bytes per event %v in memory, want none", *res.BytesPerEvent)
				}
				return
			}
			if res.FloorP50 <= 0 {
				t.Errorf("floor p50 %v, want > 0", res.FloorP50)
			}
			if concurrent := name == "file"; concurrent != (res.Floor8vs1 > 0) {
				t.Errorf("floor 8 vs 1 = %v; want one measured: %v", res.Floor8vs1, concurrent)
			}
			if res.BytesPerEvent == nil || *res.BytesPerEvent < float64(res.EventJSONBytes)/2 {
				t.Errorf("bytes per event %v, want at least half the event's %d JSON bytes", res.BytesPerEvent, res.EventJSONBytes)
			}
		})
	}
}

// TestMeasure_ServerBackends measures the server stores at tiny sizes:
// every figure is set, and the stores whose floor write has no condition
// (redis, mongodb) have their compare-and-append floor measured beside it.
func TestMeasure_ServerBackends(t *testing.T) {
	for name, env := range map[string]string{"postgres": testenv.Postgres, "redis": testenv.Redis, "mongodb": testenv.MongoDB} {
		t.Run(name, func(t *testing.T) {
			res := measureTiny(t, testenv.URL(t, env), t.TempDir())
			if res.AppendP50["10"] <= 0 || res.FloorP50 <= 0 || res.ResumeMS["40"] <= 0 || res.Concurrent8vs1 <= 0 || res.Concurrent64vs1 <= 0 {
				t.Errorf("append %v, floor %v, resume %v, 8 vs 1 %v: want all > 0", res.AppendP50, res.FloorP50, res.ResumeMS, res.Concurrent8vs1)
			}
			checkCost(t, res)
			if atomic := name != "postgres"; atomic != (res.AtomicFloorCPU > 0) {
				t.Errorf("atomic floor CPU %v µs per write; want one measured: %v", res.AtomicFloorCPU, atomic)
			}
			if atomic := name != "postgres"; atomic != (res.AtomicFloorP50 > 0 && res.AtomicFloor != "") {
				t.Errorf("atomic floor %q at %v µs; want one measured: %v", res.AtomicFloor, res.AtomicFloorP50, atomic)
			}
		})
	}
}

// checkCost checks the CPU time and allocations per append and per floor
// write: measured, and within what one call of a few KB could cost.
func checkCost(t *testing.T, res Result) {
	t.Helper()
	if res.CPUPerAppend <= 0 || res.CPUPerAppend > 1e5 || res.FloorCPU < 0 || res.FloorCPU > 1e5 {
		t.Errorf("CPU per append %v µs, per floor write %v µs; want above 0 and under 0.1 s", res.CPUPerAppend, res.FloorCPU)
	}
	// The own CPU is the median of the rounds' append minus floor, and no
	// block's CPU is negative: it is at most the appends' median and at
	// least minus the floor writes'.
	if own := res.OwnCPU; own > res.CPUPerAppend || -own > res.FloorCPU {
		t.Errorf("own CPU %v µs per append, with %v per append and %v per floor write; want it between minus the second and the first",
			own, res.CPUPerAppend, res.FloorCPU)
	}
	// An append copies the event at least once; no call needs thousands.
	if res.AllocsPerAppend < 1 || res.AllocsPerAppend > 5000 || res.FloorAllocs < 0 || res.FloorAllocs > 5000 {
		t.Errorf("allocations per append %v, per floor write %v; want 1 to 5,000 and 0 to 5,000", res.AllocsPerAppend, res.FloorAllocs)
	}
}

func TestNaive(t *testing.T) {
	n, err := naive(t.Context(), t.TempDir(), tiny.steps)
	if err != nil {
		t.Fatal(err)
	}
	if n.Steps != tiny.steps || n.NaiveMS <= 0 || n.CairnMS <= 0 || n.Ratio <= 0 {
		t.Errorf("naive = %+v, want every time set", n)
	}
	// The rewrite writes the whole history each step: 1+2+…+20 events.
	if n.NaiveBytes < 200*int64(EventJSONBytes(Event(1))) || n.CairnBytes >= n.NaiveBytes/5 {
		t.Errorf("naive wrote %d bytes, cairn %d; want over 200 events' worth and a fifth of it at most", n.NaiveBytes, n.CairnBytes)
	}
}

func TestEvent_RealisticAndValid(t *testing.T) {
	for seq := int64(1); seq <= 2; seq++ {
		e := Event(seq)
		if _, err := e.Decode(); err != nil {
			t.Fatalf("event %d: %v", seq, err)
		}
		if n := EventJSONBytes(e); n < 900 || n > 1500 {
			t.Errorf("event %d (%s) is %d bytes of JSON, want about 1 KB", seq, e.Kind, n)
		}
	}
}

func TestBackendName(t *testing.T) {
	for raw, want := range map[string]string{"memory:": "memory", "postgresql://h/db": "postgres", "rediss://h": "redis",
		"mongodb+srv://h": "mongodb", "sqlite:///x.db": "sqlite", "file:///d": "file"} {
		if got := backendName(raw); got != want {
			t.Errorf("backendName(%q) = %q, want %q", raw, got, want)
		}
	}
}

// checkLong checks the long-conversation figures: a turn's time early and
// late, the largest request, and the opens.
func checkLong(t *testing.T, name string, res Result) {
	t.Helper()
	for _, k := range []string{"10", "30"} {
		if res.AgentTurnUS[k] <= 0 {
			t.Errorf("agent turn at %s: %v µs, want > 0", k, res.AgentTurnUS[k])
		}
	}
	if res.RequestTokensMax["30"] < res.RequestTokensMax["10"] || res.RequestTokensMax["10"] <= 0 {
		t.Errorf("largest requests %v, want > 0 and not shrinking", res.RequestTokensMax)
	}
	for _, k := range []string{"3", "30", "reopened"} {
		if res.OpenMS[k] <= 0 {
			t.Errorf("open of %s turns: %v ms, want > 0", k, res.OpenMS[k])
		}
	}
	if name != "memory" && (res.SessionBytes["one_process"] <= 0 || res.SessionBytes["reopened"] <= 0) {
		t.Errorf("session bytes %v, want both > 0", res.SessionBytes)
	}
}

// hangingStore answers its first appends, then holds every later one
// until its context ends, as a server that stops answering does.
type hangingStore struct {
	cairn.Store
	left atomic.Int64
}

func (h *hangingStore) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	if h.left.Add(-1) >= 0 {
		return h.Store.Append(ctx, id, expectSeq, events...)
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestThroughput_StoreStopsAnswering checks that the concurrency
// measurement ends with an error naming the stall, rather than waiting
// for good, when the store stops answering midway.
func TestThroughput_StoreStopsAnswering(t *testing.T) {
	defer func(d time.Duration) { stallAfter = d }(stallAfter)
	stallAfter = 300 * time.Millisecond
	mem, err := cairn.Open(t.Context(), "memory:", cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingStore{Store: mem}
	h.left.Store(20)
	done := make(chan error, 1)
	go func() {
		_, err := throughput(t.Context(), &backend{store: h}, 8, 10)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errStalled) || !strings.Contains(err.Error(), "8 sessions appending at once: no append finished in 300ms") {
			t.Fatalf("throughput = %v, want the stall named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("throughput still waits 30s after the store stopped answering")
	}
	// A store that answers is not taken for stalled.
	if _, err := throughput(t.Context(), &backend{store: mem}, 8, 10); err != nil {
		t.Fatal(err)
	}
}
