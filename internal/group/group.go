// Package group lets many goroutines' calls share the costly part of
// their work. Queue shares round trips to a server: a call made while the
// queue's sends are all in flight waits, and the next send carries every
// call that waited, as one pipeline. The Redis store sends its appends
// through one (store/redis/group.go). Gather is the wait of a group commit
// for the callers of its last commit, which the SQLite store's group
// commit makes before each transaction.
package group

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// Queue runs calls of type R, alone or in groups. Its zero value is not
// usable: set Max, One and Many first.
type Queue[R any] struct {
	// Max is the most sends in flight at once; MaxGroup the most calls one
	// send carries (0: no bound).
	Max, MaxGroup int
	// One sends one call and Many several, in one round trip. Each answers
	// every call it is given through the call's own fields before it
	// returns. ctx is the caller's for a call that did not wait; for a
	// group, a context that ends once every call in it has stopped waiting.
	One  func(ctx context.Context, r R)
	Many func(ctx context.Context, rs []R)

	mu      sync.Mutex
	leaders int // sends in flight
	waiting []*call[R]

	groups, grouped atomic.Int64
}

type call[R any] struct {
	r    R
	ctx  context.Context
	sent bool          // answered by One or Many, set before done closes
	done chan struct{} // closed once the call is answered or left out
}

// Do runs r and returns nil once it is answered. With fewer than Max sends
// in flight, it sends r alone, at once, in the caller's goroutine. Else r
// waits for the next send, which a send that ends starts with every call
// waiting by then (up to MaxGroup).
//
// If ctx ends first, Do returns its error and r's fields must not be read:
// r left the queue and was not sent if it was still waiting, or it is in
// a send that goes on while other calls of its group wait for it, and its
// effect is unknown, as for any call cancelled mid-flight.
func (q *Queue[R]) Do(ctx context.Context, r R) error {
	q.mu.Lock()
	if q.leaders < max(q.Max, 1) {
		q.leaders++
		q.mu.Unlock()
		q.One(ctx, r)
		q.next()
		return nil
	}
	c := &call[R]{r: r, ctx: ctx, done: make(chan struct{})}
	q.waiting = append(q.waiting, c)
	q.mu.Unlock()
	select {
	case <-c.done:
		if !c.sent {
			return ctx.Err() // left out of its group: its context had ended
		}
		return nil
	case <-ctx.Done():
		q.mu.Lock()
		if i := slices.Index(q.waiting, c); i >= 0 {
			q.waiting = slices.Delete(q.waiting, i, i+1)
		}
		q.mu.Unlock()
		select {
		case <-c.done:
			if c.sent { // answered meanwhile
				return nil
			}
		default:
		}
		return ctx.Err()
	}
}

// Stats returns how many sends carried more than one call, and how many
// calls they carried.
func (q *Queue[R]) Stats() (groups, calls int64) {
	return q.groups.Load(), q.grouped.Load()
}

// next starts the next send with the calls waiting, if any, or gives up
// the slot of the send that just ended.
func (q *Queue[R]) next() {
	q.mu.Lock()
	if len(q.waiting) == 0 {
		q.leaders--
		q.mu.Unlock()
		return
	}
	n := len(q.waiting)
	if q.MaxGroup > 0 {
		n = min(n, q.MaxGroup)
	}
	g := slices.Clone(q.waiting[:n])
	q.waiting = slices.Delete(q.waiting, 0, n)
	q.mu.Unlock()
	go func() {
		q.send(g)
		q.next()
	}()
}

// send sends the calls of g that still wait, under a context that ends
// once none does, and tells each it is answered.
func (q *Queue[R]) send(g []*call[R]) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(g[0].ctx))
	defer cancel()
	var live []*call[R]
	var waiting atomic.Int64
	for _, c := range g {
		if c.ctx.Err() != nil {
			close(c.done) // Do returns the context's error
			continue
		}
		live = append(live, c)
		waiting.Add(1)
		stop := context.AfterFunc(c.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	switch len(live) {
	case 0:
		return
	case 1:
		q.One(ctx, live[0].r)
	default:
		rs := make([]R, len(live))
		for i, c := range live {
			rs[i] = c.r
		}
		q.groups.Add(1)
		q.grouped.Add(int64(len(rs)))
		q.Many(ctx, rs)
	}
	for _, c := range live {
		c.sent = true
		close(c.done)
	}
}
