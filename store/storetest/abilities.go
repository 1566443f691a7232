package storetest

import (
	"reflect"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Abilities are the optional store abilities (the optional interfaces of
// package cairn) that a backend declares to Run. The suite tests every
// declared ability, and fails a store that lacks one it declares or has one
// it does not declare: an ability never goes missing, or goes untested,
// without a failing test.
type Abilities struct {
	Leases bool // cairn.Leaser: Acquire, Takeover, Renew, Release, CurrentLease, AppendFenced
	Claims bool // driver.Claimer: ClaimNext (a store with claims has leases too)
	Sweep  bool // driver.Sweeper: Sweep
	Check  bool // driver.Checker: Check
	Search bool // driver.Searcher: Search, kept by Append and erased by Delete, expiry and Sweep

	// Snapshots is cairn.Snapshotter: PutSnapshot, LoadSnapshot,
	// DropSnapshot, and cairn.Restore through them.
	Snapshots bool

	// Envelopes is not an ability but a test hook into the backend's
	// storage: it returns the envelopes of session id as s stored them,
	// in seq order, without what the backend keeps around each (a
	// checksum field, a line's end). The Envelopes test then checks
	// that they are byte for byte driver.AppendEnvelope's, and that Load
	// returns them as stored. A backend that stores no envelope bytes of
	// its own (memory, a wrapper over another backend) leaves it nil,
	// and the test checks only that Load returns events that encode to
	// the same envelopes.
	Envelopes func(t *testing.T, s cairn.Store, id string) [][]byte

	// DeleteEvent is another test hook into the backend's storage: it
	// deletes the event of seq from session id's stored history, as a
	// person or a program outside cairn would (a row, a list element, a
	// document, a line of a log). The DeletedEvent test then checks that
	// Load reports the session damaged. A backend with no storage outside
	// the process (memory) or that stores through another (a wrapper)
	// leaves it nil, and the test is not run.
	DeleteEvent func(t *testing.T, s cairn.Store, id string, seq int64)
}

// ability is one optional interface: its name in Abilities, whether a
// backend declared it and whether a store implements it.
type ability struct {
	field, iface string
	declared     bool
	has          func(cairn.Store) bool
}

func (a Abilities) list() []ability {
	return []ability{
		{"Leases", "cairn.Leaser", a.Leases, implements[cairn.Leaser]},
		{"Claims", "driver.Claimer", a.Claims, implements[driver.Claimer]},
		{"Sweep", "driver.Sweeper", a.Sweep, implements[driver.Sweeper]},
		{"Check", "driver.Checker", a.Check, implements[driver.Checker]},
		{"Search", "driver.Searcher", a.Search, implements[driver.Searcher]},
		{"Snapshots", "cairn.Snapshotter", a.Snapshots, implements[cairn.Snapshotter]},
	}
}

// testAbilities checks that the stores the opener returns have exactly the
// declared abilities, on a first open and on a reopen.
func testAbilities(t *testing.T, h *harness) {
	if h.abilities.Claims && !h.abilities.Leases {
		t.Errorf("Abilities declares Claims without Leases: driver.Claimer is an ability of a store with leases")
	}
	for i, s := range []cairn.Store{h.store(t), h.store(t)} {
		for _, a := range h.abilities.list() {
			switch has := a.has(s); {
			case a.declared && !has:
				t.Errorf("open %d: the backend declares %s, but %T does not implement %s", i+1, a.field, s, a.iface)
			case !a.declared && has:
				t.Errorf("open %d: %T implements %s, but the backend does not declare %s in storetest.Abilities", i+1, s, a.iface, a.field)
			}
		}
	}
}

// as returns s as T, an optional interface the backend declares, failing
// the test when s does not implement it.
func as[T any](t *testing.T, s cairn.Store) T {
	t.Helper()
	v, ok := s.(T)
	if !ok {
		t.Fatalf("%T does not implement %v, which the backend declares", s, reflect.TypeFor[T]())
	}
	return v
}

// implements reports whether s implements T.
func implements[T any](s cairn.Store) bool {
	_, ok := s.(T)
	return ok
}
