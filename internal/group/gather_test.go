package group

import (
	"sync/atomic"
	"testing"
	"time"
)

// waitFor runs g.Wait(waiting) and returns how long it took; it fails the
// test if Wait has not returned after a minute.
func waitFor(t *testing.T, g *Gather, waiting func() int) time.Duration {
	t.Helper()
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		g.Wait(waiting)
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		return d
	case <-time.After(time.Minute):
		t.Fatal("Wait did not return")
		return 0
	}
}

func TestGather_NoWaitAfterALoneAppend(t *testing.T) {
	g := NewGather()
	g.max = time.Hour
	// Nothing committed yet, then a commit of one append (a lone writer):
	// Wait returns at once, though its bound would be 15 minutes.
	waitFor(t, g, func() int { return 0 })
	g.Done(1, time.Hour)
	waitFor(t, g, func() int { return 0 })
}

func TestGather_WaitsForTheLastCommitsCallers(t *testing.T) {
	g := NewGather()
	g.max = time.Hour
	g.Done(3, time.Hour) // a bound of 15 minutes: only the callers can end it
	var n atomic.Int64
	go func() {
		for range 2 {
			time.Sleep(10 * time.Millisecond)
			n.Add(1)
			g.Joined()
		}
	}()
	waitFor(t, g, func() int { return int(n.Load()) })
	if got := n.Load(); got != 2 {
		t.Fatalf("Wait returned with %d callers waiting, want the last commit's other 2", got)
	}
}

func TestGather_WaitIsBounded(t *testing.T) {
	g := NewGather()
	g.max = time.Hour
	g.Done(8, 80*time.Millisecond)
	// One caller of seven comes back: Wait still ends, a quarter of the
	// last commit's time (20 ms) after it began.
	go g.Joined()
	if d := waitFor(t, g, func() int { return 1 }); d < 20*time.Millisecond {
		t.Fatalf("Wait returned after %v, before its bound of 20ms, with 1 of 7 callers back", d)
	}
	// The bound is MaxGatherWait at most, however long the last commit took
	// (a bound of 15 minutes would fail waitFor).
	g = NewGather()
	g.Done(8, time.Hour)
	if d := waitFor(t, g, func() int { return 0 }); d < MaxGatherWait {
		t.Fatalf("Wait returned after %v, before MaxGatherWait", d)
	}
}
