package group

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type req struct {
	n      int
	sends  int // how many times One or Many answered it
	inMany bool
}

func TestQueue_EveryCallAnsweredOnce(t *testing.T) {
	var inFlight, most atomic.Int64
	enter := func() {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
	}
	q := &Queue[*req]{Max: 2, MaxGroup: 5}
	// Each send takes a while, as a round trip does, so that calls wait.
	q.One = func(_ context.Context, r *req) {
		enter()
		time.Sleep(100 * time.Microsecond)
		r.sends++
		inFlight.Add(-1)
	}
	q.Many = func(_ context.Context, rs []*req) {
		enter()
		time.Sleep(100 * time.Microsecond)
		if len(rs) < 2 || len(rs) > 5 {
			t.Errorf("a group of %d calls", len(rs))
		}
		for _, r := range rs {
			r.sends++
			r.inMany = true
		}
		inFlight.Add(-1)
	}
	reqs := make([]*req, 2000)
	var wg sync.WaitGroup
	for w := range 20 {
		wg.Go(func() {
			for i := w; i < len(reqs); i += 20 {
				reqs[i] = &req{n: i}
				if err := q.Do(t.Context(), reqs[i]); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	grouped := 0
	for _, r := range reqs {
		if r.sends != 1 {
			t.Fatalf("call %d answered %d times", r.n, r.sends)
		}
		if r.inMany {
			grouped++
		}
	}
	groups, calls := q.Stats()
	if groups == 0 || calls != int64(grouped) {
		t.Errorf("Stats() = %d groups of %d calls; %d calls were answered in groups", groups, calls, grouped)
	}
	if m := most.Load(); m > 2 {
		t.Errorf("%d sends in flight at once, want at most Max = 2", m)
	}
}

// A call whose context ends while it waits leaves the queue unsent; the
// calls behind it are sent.
func TestQueue_CancelWhileWaiting(t *testing.T) {
	release := make(chan struct{})
	var sent sync.Map
	q := &Queue[*req]{Max: 1}
	q.One = func(_ context.Context, r *req) {
		if r.n == 0 {
			<-release
		}
		sent.Store(r.n, true)
	}
	q.Many = func(_ context.Context, rs []*req) {
		for _, r := range rs {
			sent.Store(r.n, true)
		}
	}
	first := make(chan error)
	go func() { first <- q.Do(context.Background(), &req{n: 0}) }()
	for { // wait until call 0 holds the one slot
		q.mu.Lock()
		busy := q.leaders == 1
		q.mu.Unlock()
		if busy {
			break
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error)
	go func() { gone <- q.Do(ctx, &req{n: 1}) }()
	waitWaiting(q, 1)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
	third := make(chan error)
	go func() { third <- q.Do(context.Background(), &req{n: 2}) }()
	waitWaiting(q, 1)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	if _, ok := sent.Load(1); ok {
		t.Error("the cancelled call was sent")
	}
	if _, ok := sent.Load(2); !ok {
		t.Error("the call behind the cancelled one was not sent")
	}
}

func waitWaiting(q *Queue[*req], n int) {
	for {
		q.mu.Lock()
		k := len(q.waiting)
		q.mu.Unlock()
		if k == n {
			return
		}
	}
}
