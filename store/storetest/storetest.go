// Package storetest is the conformance suite of the cairn store contract.
// Every backend runs all of it by adding one test function that declares
// the backend's optional abilities:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Abilities{Leases: true, Sweep: true}, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
//			s, err := mybackend.Open(t.Context(), dsn, opts)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite checks ordering, all-or-nothing appends, seq conflicts under
// many concurrent writers, replay equality after a reopen, listing with its
// order, fields, filters and cursor, deletion, TTL on a controlled clock,
// namespaces, limits, retried appends, every method after Close and every
// sentinel error, and each declared ability (leases and fenced appends,
// claims, sweeping, checking, search, snapshots and cairn.Restore through them). A
// store that lacks a declared ability, or has one it does not declare,
// fails.
//
// A store kept at a path on this machine's disk (the file and SQLite
// stores) runs two more: LocalLockFiles, its driver.LocalLocker, and
// OpenTogether, a new store opened by many processes at once.
package storetest

import (
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
)

// Opener opens a store with the given options. Within one test (one t),
// every call must reach the same stored data, so that a second call is a
// reopen: a store opened on the same database, folder or server. The opener
// registers the store's Close with t.Cleanup. Options it does not set
// itself (the backend's address) it takes from its own configuration.
type Opener func(t *testing.T, opts cairn.StoreOptions) cairn.Store

// PerTest returns a function that gives each test (each t) a value of its
// own: the one newValue makes at the test's first call, and the same at
// its next ones. An Opener keeps there what every store of one test must
// reach again (a database, a folder, a file's path). Safe for concurrent
// use.
func PerTest[V any](newValue func(t *testing.T) V) func(t *testing.T) V {
	var mu sync.Mutex
	values := map[*testing.T]V{}
	return func(t *testing.T) V {
		mu.Lock()
		defer mu.Unlock()
		v, ok := values[t]
		if !ok {
			v = newValue(t)
			values[t] = v
		}
		return v
	}
}

// Opened returns s, a store just opened, closed when the test ends; err,
// the error of its opening, fails the test at once.
func Opened[S interface{ Close() error }](tb testing.TB, s S, err error) S {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Run runs the whole conformance suite against the stores open returns,
// which must have exactly the optional abilities declared. Each test uses a
// namespace of its own, so a shared server can run the suite while holding
// other data.
func Run(t *testing.T, abilities Abilities, open Opener) {
	type test struct {
		name string
		fn   func(*testing.T, *harness)
	}
	tests := []test{
		{"Abilities", testAbilities},
		{"Create", testCreate},
		{"CreateExists", testCreateExists},
		{"InvalidID", testInvalidID},
		{"AppendLoad", testAppendLoad},
		{"LoadFrom", testLoadFrom},
		{"LoadFromTail", testLoadFromTail},
		{"Stat", testStat},
		{"AppendConflict", testAppendConflict},
		{"AppendRetried", testAppendRetried},
		{"AppendRetriedStale", testAppendRetriedStale},
		{"AppendNotFound", testAppendNotFound},
		{"AppendInvalid", testAppendInvalid},
		{"AppendAtomic", testAppendAtomic},
		{"Limits", testLimits},
		{"ConcurrentAppend", testConcurrentAppend},
		{"ConcurrentSessions", testConcurrentSessions},
		{"ReplayEquality", testReplayEquality},
		{"Envelopes", testEnvelopes},
		{"LongHistory", testLongHistory},
		{"List", testList},
		{"ListPaging", testListPaging},
		{"ListFilters", testListFilters},
		{"ListPrefix", testListPrefix},
		{"ListLabelOrder", testListLabelOrder},
		{"Delete", testDelete},
		{"TTL", testTTL},
		{"LongTTL", testLongTTL},
		{"Namespaces", testNamespaces},
		{"Closed", testClosed},
	}
	if abilities.Sweep {
		tests = append(tests, test{"Sweep", testSweep})
	}
	if abilities.Check {
		tests = append(tests, test{"Check", testCheck})
	}
	if abilities.Search {
		tests = append(tests, test{"Search", testSearch})
	}
	if abilities.DeleteEvent != nil {
		tests = append(tests, test{"DeletedEvent", testDeletedEvent})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newHarness(open, abilities))
		})
	}
	if abilities.Leases {
		runLease(t, open, abilities)
	}
	if abilities.Snapshots {
		runSnapshots(t, open, abilities)
	}
}

// harness opens stores for one test in a namespace of its own.
type harness struct {
	open      Opener
	abilities Abilities
	ns        string
	clock     *Clock
}

func newHarness(open Opener, abilities Abilities) *harness {
	return &harness{open: open, abilities: abilities, ns: "st_" + testenv.RandHex(6), clock: NewClock()}
}

// store opens a store on the test's namespace with the test's clock.
func (h *harness) store(t *testing.T) cairn.Store {
	return h.storeWith(t, cairn.StoreOptions{})
}

func (h *harness) storeWith(t *testing.T, opts cairn.StoreOptions) cairn.Store {
	t.Helper()
	if opts.Namespace == "" {
		opts.Namespace = h.ns
	}
	opts.Now = h.clock.Now
	s := h.open(t, opts)
	if s == nil {
		t.Fatal("opener returned a nil store")
	}
	return s
}

// newSession creates a session with a fresh ID and returns the ID.
func newSession(t *testing.T, s cairn.Store, labels map[string]string) string {
	t.Helper()
	id := "s-" + testenv.RandHex(8)
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id, Labels: labels}); err != nil {
		t.Fatalf("Create(%s): %v", id, err)
	}
	return id
}

func mustAppend(t *testing.T, s cairn.Store, id string, expect int64, events ...cairn.Event) {
	t.Helper()
	if err := s.Append(t.Context(), id, expect, events...); err != nil {
		t.Fatalf("Append(%s, expect %d, %d events): %v", id, expect, len(events), err)
	}
}

func mustLoad(t *testing.T, s cairn.Store, id string) *cairn.Record {
	t.Helper()
	rec, err := s.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatalf("Load(%s): %v", id, err)
	}
	return rec
}
