package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
)

// cost is what a loop of calls took from the process, per call: user and
// system CPU time (of every thread, so the work a call leaves to the
// store's background goroutines and to the garbage collector counts too)
// and heap allocations. Unlike a latency it does not move with the disk,
// the network or the other processes on the machine.
type cost struct {
	cpuUS  float64
	allocs float64
}

// costOf runs f(0) … f(n-1) and returns their cost per call.
func costOf(n int, f func(i int) error) (cost, error) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	c0 := processCPU()
	for i := range n {
		if err := f(i); err != nil {
			return cost{}, err
		}
	}
	c1 := processCPU()
	runtime.ReadMemStats(&m1)
	return cost{cpuUS: round(float64((c1 - c0).Nanoseconds()) / 1e3 / float64(n)),
		allocs: round(float64(m1.Mallocs-m0.Mallocs) / float64(n))}, nil
}

// cpuRounds is how many blocks the CPU measurement splits its appends and
// floor writes into, taken in turns: a machine whose speed drifts during
// the measurement moves both alike, and the medians leave out a block
// that a neighbour's burst of work fell into.
const cpuRounds = 5

// measureCPU measures the cost of n appends of one realistic event to a
// session of 10 events and more, one after another, and of n floor writes
// (and atomic floor writes) the same way, in cpuRounds rounds of a block
// of each in turn. It reports the medians of the blocks, and the median of
// each round's append minus its floor as the append's own CPU. The events
// are made before the loop, so that only the store's work counts.
func measureCPU(ctx context.Context, b *backend, n int, res *Result) error {
	id, err := b.session(ctx)
	if err != nil {
		return err
	}
	if err := prefill(ctx, b.store, id, 0, 10); err != nil {
		return err
	}
	block := max(1, n/cpuRounds)
	evs := Events(11, int64(10+block*cpuRounds))
	body, _ := json.Marshal(Event(1))
	var apps, floors, atomics, own, allocs, floorAllocs []float64
	seq := int64(10)
	for range cpuRounds {
		c, err := costOf(block, func(int) error {
			err := b.store.Append(ctx, id, seq, evs[seq-10])
			seq++
			return err
		})
		if err != nil {
			return err
		}
		f, err := costOf(block, func(int) error { return b.floor.write(ctx, body) })
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		apps, floors, own = append(apps, c.cpuUS), append(floors, f.cpuUS), append(own, c.cpuUS-f.cpuUS)
		allocs, floorAllocs = append(allocs, c.allocs), append(floorAllocs, f.allocs)
		if b.atomic != nil {
			a, err := costOf(block, func(int) error { return b.atomic.write(ctx, body) })
			if err != nil {
				return fmt.Errorf("atomic floor: %w", err)
			}
			atomics = append(atomics, a.cpuUS)
		}
	}
	res.CPUPerAppend, res.FloorCPU, res.OwnCPU = round(median(apps)), round(median(floors)), round(median(own))
	res.AllocsPerAppend, res.FloorAllocs = round(median(allocs)), round(median(floorAllocs))
	if len(atomics) > 0 {
		res.AtomicFloorCPU = round(median(atomics))
	}
	return nil
}
