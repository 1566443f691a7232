package group

import (
	"sync/atomic"
	"time"
)

// Gather is the wait of a group commit (the SQLite store's transactions)
// for the callers of its last commit.
//
// A group commit makes every append waiting when it starts durable with
// one flush. Callers that append without pause (several sessions, each
// appending its next event as soon as the last one is durable) come back
// a few microseconds after their commit ends, just after the next one has
// started with whoever waited meanwhile. They then split into two groups
// that take turns, each with half the appends per flush. The leader of a
// commit therefore waits, before it takes its batch, until as many callers
// wait as the last commit held, or until a quarter of the last commit's
// time has passed (MaxGatherWait at most), whichever comes first: the two
// groups become one. After a commit of one append, as with a single
// writer, it does not wait at all, so a lone writer's latency is what it
// was; a commit of several waits at most a quarter longer.
//
// Its zero value is not usable: use NewGather.
type Gather struct {
	arrived chan struct{}
	last    atomic.Int64 // appends of the last commit
	took    atomic.Int64 // how long it took, in nanoseconds
	max     time.Duration
}

// MaxGatherWait bounds the wait of Gather.Wait, whatever the last commit
// took.
const MaxGatherWait = time.Millisecond

// NewGather returns a Gather that has seen no commit.
func NewGather() *Gather { return &Gather{arrived: make(chan struct{}, 1), max: MaxGatherWait} }

// Joined tells a waiting leader that a caller has joined the queue. It
// never blocks.
func (g *Gather) Joined() {
	select {
	case g.arrived <- struct{}{}:
	default:
	}
}

// Wait is called by a commit's leader before it takes its batch; waiting
// tells how many callers other than the leader wait in the queue (it is
// called without the caller's locks, and takes them itself). It returns
// once they are as many as the last commit's others, or once the wait's
// bound has passed.
func (g *Gather) Wait(waiting func() int) {
	want := int(g.last.Load()) - 1
	if want <= 0 || waiting() >= want {
		return
	}
	t := time.NewTimer(g.bound())
	defer t.Stop()
	for {
		select {
		case <-g.arrived:
			if waiting() >= want {
				return
			}
		case <-t.C:
			return
		}
	}
}

// bound is how long Wait waits at most: a quarter of the last commit's
// time, and MaxGatherWait at most.
func (g *Gather) bound() time.Duration {
	return min(time.Duration(g.took.Load())/4, g.max)
}

// Done records a commit of n appends that took took, from the moment its
// leader took the batch to the moment it was durable.
func (g *Gather) Done(n int, took time.Duration) {
	g.last.Store(int64(n))
	g.took.Store(int64(took))
}
