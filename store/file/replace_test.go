//go:build linux || darwin

package file_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_ReplacedWhileOpening: one store deletes and creates a session
// again and again while another store opens it. A reader that meets the
// session between the two (its lock file gone with the old folder, the
// new folder already in place) must not take it for a folder without its
// lock file: a session that is replaced is never damaged.
func TestStore_ReplacedWhileOpening(t *testing.T) {
	dir := t.TempDir()
	writer := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	ctx := t.Context()
	if err := writer.Create(ctx, cairn.SessionMeta{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			writer.Delete(ctx, "r")
			writer.Create(ctx, cairn.SessionMeta{ID: "r"})
			writer.Append(ctx, "r", 0, storetest.Custom(1, "x"))
		}
	}()
	var damaged []error
	var mu sync.Mutex
	deadline := time.Now().Add(3 * time.Second)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				// A store of its own each time: no session it knows from before.
				r := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
				for range 20 {
					var err error
					if w == 0 {
						var l cairn.Lease
						l, err = r.Acquire(ctx, "r", "reader", time.Minute)
						if err == nil {
							r.Release(ctx, l)
						}
					} else {
						_, err = r.Load(ctx, "r", 0)
					}
					if errors.Is(err, cairn.ErrDamaged) {
						mu.Lock()
						damaged = append(damaged, err)
						mu.Unlock()
					}
				}
				r.Close()
			}
		}()
	}
	time.Sleep(time.Until(deadline))
	close(stop)
	wg.Wait()
	if len(damaged) > 0 {
		t.Fatalf("%d calls on a session being replaced answered it damaged, the first: %v", len(damaged), damaged[0])
	}
}
