package crypt

import (
	"context"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

var (
	_ driver.LocalLocker = (*store)(nil)
	_ cairn.Leaser       = (*leasing)(nil)
	_ driver.Claimer     = (*claiming)(nil)
	_ driver.Checker     = (*checking)(nil)
	_ cairn.Leaser       = (*leasingChecking)(nil)
	_ driver.Checker     = (*leasingChecking)(nil)
	_ driver.Claimer     = (*claimingChecking)(nil)
	_ driver.Checker     = (*claimingChecking)(nil)

	_ cairn.Snapshotter = (*snapshots)(nil)
	_ driver.Checker    = (*checkingSnapshots)(nil)
	_ cairn.Snapshotter = (*checkingSnapshots)(nil)
	_ cairn.Leaser      = (*leasingSnapshots)(nil)
	_ cairn.Snapshotter = (*leasingSnapshots)(nil)
	_ driver.Checker    = (*leasingCheckingSnapshots)(nil)
	_ cairn.Snapshotter = (*leasingCheckingSnapshots)(nil)
	_ driver.Claimer    = (*claimingSnapshots)(nil)
	_ cairn.Snapshotter = (*claimingSnapshots)(nil)
	_ driver.Claimer    = (*claimingCheckingSnapshots)(nil)
	_ driver.Checker    = (*claimingCheckingSnapshots)(nil)
	_ cairn.Snapshotter = (*claimingCheckingSnapshots)(nil)
)

// withAbilities returns s with exactly the optional abilities of the
// store it wraps.
//
// Go cannot add methods to a value at run time, so there is one type per
// combination: leases (cairn.Leaser, whose fenced appends are sealed like
// Append), claims (driver.Claimer, which needs leases), checks
// (driver.Checker) and snapshots (cairn.Snapshotter, whose data is sealed
// like events). Sweeper is always there, and so is LocalLocker, whose
// LockFile answers "" over a store without lock files (its documented
// fallback), so that it needs no types of its own.
// TestWrap_KnowsEveryAbility fails when package cairn gains an optional
// interface this does not carry.
func (s *store) withAbilities() Store {
	base := s.withLeasesAndChecks()
	sn, ok := s.inner.(cairn.Snapshotter)
	if !ok {
		return base
	}
	sp := snapshotter{s: s, sn: sn}
	switch b := base.(type) {
	case *checking:
		return &checkingSnapshots{checking: b, snapshotter: sp}
	case *leasing:
		return &leasingSnapshots{leasing: b, snapshotter: sp}
	case *leasingChecking:
		return &leasingCheckingSnapshots{leasingChecking: b, snapshotter: sp}
	case *claiming:
		return &claimingSnapshots{claiming: b, snapshotter: sp}
	case *claimingChecking:
		return &claimingCheckingSnapshots{claimingChecking: b, snapshotter: sp}
	}
	return &snapshots{store: s, snapshotter: sp}
}

// withLeasesAndChecks returns s with the leases, claims and checks of the
// store it wraps.
func (s *store) withLeasesAndChecks() Store {
	k, checks := s.inner.(driver.Checker)
	ck := checker{s: s, k: k}
	l, leases := s.inner.(cairn.Leaser)
	if !leases {
		if checks {
			return &checking{store: s, checker: ck}
		}
		return s
	}
	ls := &leasing{store: s, l: l}
	if c, ok := s.inner.(driver.Claimer); ok {
		cl := &claiming{leasing: ls, c: c}
		if checks {
			return &claimingChecking{claiming: cl, checker: ck}
		}
		return cl
	}
	if checks {
		return &leasingChecking{leasing: ls, checker: ck}
	}
	return ls
}

// checking is a Store over an inner store with checks and no leases.
type checking struct {
	*store
	checker
}

// leasingChecking is a Store over an inner store with leases and checks.
type leasingChecking struct {
	*leasing
	checker
}

// claimingChecking is a Store over an inner store with leases, claims and
// checks.
type claimingChecking struct {
	*claiming
	checker
}

// snapshots and the types after it add snapshots to each of the
// combinations above.
type snapshots struct {
	*store
	snapshotter
}

type checkingSnapshots struct {
	*checking
	snapshotter
}

type leasingSnapshots struct {
	*leasing
	snapshotter
}

type leasingCheckingSnapshots struct {
	*leasingChecking
	snapshotter
}

type claimingSnapshots struct {
	*claiming
	snapshotter
}

type claimingCheckingSnapshots struct {
	*claimingChecking
	snapshotter
}

// checker carries driver.Checker.
type checker struct {
	s *store
	k driver.Checker
}

// Check implements driver.Checker; see (*store).check.
func (c checker) Check(ctx context.Context) (*driver.CheckReport, error) { return c.s.check(ctx, c.k) }

// LockFile implements driver.LocalLocker: the wrapped store's lock file,
// which the store shares with every process that opens it, encrypting or
// not; "" when the wrapped store has none.
func (s *store) LockFile(id string) string {
	if l, ok := s.inner.(driver.LocalLocker); ok {
		return l.LockFile(id)
	}
	return ""
}
