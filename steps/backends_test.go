package steps_test

import (
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/fault"
)

// TestBackends runs the store cases and the lease cases on every backend
// but memory (TestSteps and TestLease_Memory run them there): file and
// sqlite in a temporary folder, postgres, redis and mongodb on the servers
// CAIRN_TEST_POSTGRES, CAIRN_TEST_REDIS and CAIRN_TEST_MONGODB name
// (skipped, naming the variable, when unset; failed under CI). Each case
// runs in a namespace of its own.
func TestBackends(t *testing.T) {
	for _, name := range fault.Backends {
		t.Run(name, func(t *testing.T) {
			store := func(t *testing.T) cairn.Store { return fault.NewBackend(t, name).Direct(t) }
			store(t) // skip the backend at once when its server is not configured
			for _, c := range storeCases {
				t.Run(c.name, func(t *testing.T) { c.fn(t, store(t)) })
			}
			t.Run("Lease/Held", func(t *testing.T) { leaseHeld(t, store(t)) })
			t.Run("Lease/Takeover", func(t *testing.T) { leaseTakeover(t, store(t)) })
			t.Run("Lease/Expiry", func(t *testing.T) {
				st := store(t)
				leaseExpiry(t, st, time.Second, func(id string) { waitExpired(t, st, id) })
			})
		})
	}
}

// waitExpired waits until the store reports no live lease on session id.
func waitExpired(t *testing.T, st cairn.Store, id string) {
	t.Helper()
	l := st.(cairn.Leaser)
	deadline := time.Now().Add(time.Minute)
	for {
		cur, err := l.CurrentLease(t.Context(), id)
		if err != nil {
			t.Errorf("current lease of %s: %v", id, err)
			return
		}
		if cur.Holder == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the lease of %s (%+v) did not expire within a minute", id, cur)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
