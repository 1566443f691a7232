package storetest

import (
	"errors"
	"sync"
)

// Race calls race(0) … race(n-1), each in a goroutine of its own, all
// released at one moment so that they race, and waits for them all. It
// returns what the calls that succeeded returned, in the order they
// returned, and the errors of the calls that failed other than by losing:
// an error that is not lost (the sentinel a call that lost the race
// answers, such as cairn.ErrConflict; nil when no call may fail).
func Race[T any](n int, lost error, race func(i int) (T, error)) (won []T, failed []error) {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			v, err := race(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, v)
			case !errors.Is(err, lost):
				failed = append(failed, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return won, failed
}
