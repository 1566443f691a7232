package storetest

import (
	"testing"

	"github.com/cairnhq/cairn"
)

// Abilities are the optional store abilities (the optional interfaces of
// package cairn) that a backend declares to Run. The suite tests every
// declared ability, and fails a store that lacks one it declares or has one
// it does not declare: an ability never goes missing, or goes untested,
// without a failing test.
type Abilities struct {
	Leases bool // cairn.Leaser: Acquire, Takeover, Renew, Release, CurrentLease, AppendFenced
	Claims bool // cairn.Claimer: ClaimNext (a store with claims has leases too)
	Sweep  bool // cairn.Sweeper: Sweep
	Check  bool // cairn.Checker: Check

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
		{"Leases", "cairn.Leaser", a.Leases, func(s cairn.Store) bool { _, ok := s.(cairn.Leaser); return ok }},
		{"Claims", "cairn.Claimer", a.Claims, func(s cairn.Store) bool { _, ok := s.(cairn.Claimer); return ok }},
		{"Sweep", "cairn.Sweeper", a.Sweep, func(s cairn.Store) bool { _, ok := s.(cairn.Sweeper); return ok }},
		{"Check", "cairn.Checker", a.Check, func(s cairn.Store) bool { _, ok := s.(cairn.Checker); return ok }},
		{"Snapshots", "cairn.Snapshotter", a.Snapshots, func(s cairn.Store) bool { _, ok := s.(cairn.Snapshotter); return ok }},
	}
}

// testAbilities checks that the stores the opener returns have exactly the
// declared abilities, on a first open and on a reopen.
func testAbilities(t *testing.T, h *harness) {
	if h.abilities.Claims && !h.abilities.Leases {
		t.Errorf("Abilities declares Claims without Leases: cairn.Claimer is an ability of a store with leases")
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

// leaser returns s as a cairn.Leaser, failing the test when it is not one.
func leaser(t *testing.T, s cairn.Store) cairn.Leaser {
	t.Helper()
	l, ok := s.(cairn.Leaser)
	if !ok {
		t.Fatalf("%T does not implement cairn.Leaser, which the backend declares", s)
	}
	return l
}

// claimer returns s as a cairn.Claimer, failing the test when it is not one.
func claimer(t *testing.T, s cairn.Store) cairn.Claimer {
	t.Helper()
	c, ok := s.(cairn.Claimer)
	if !ok {
		t.Fatalf("%T does not implement cairn.Claimer, which the backend declares", s)
	}
	return c
}

// checker returns s as a cairn.Checker, failing the test when it is not one.
func checker(t *testing.T, s cairn.Store) cairn.Checker {
	t.Helper()
	c, ok := s.(cairn.Checker)
	if !ok {
		t.Fatalf("%T does not implement cairn.Checker, which the backend declares", s)
	}
	return c
}

// sweeper returns s as a cairn.Sweeper, failing the test when it is not one.
func sweeper(t *testing.T, s cairn.Store) cairn.Sweeper {
	t.Helper()
	sw, ok := s.(cairn.Sweeper)
	if !ok {
		t.Fatalf("%T does not implement cairn.Sweeper, which the backend declares", s)
	}
	return sw
}
