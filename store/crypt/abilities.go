package crypt

import (
	"context"

	"github.com/cairnhq/cairn"
)

var (
	_ cairn.LocalLocker = (*store)(nil)
	_ cairn.Leaser      = (*leasing)(nil)
	_ cairn.Claimer     = (*claiming)(nil)
	_ cairn.Checker     = (*checking)(nil)
	_ cairn.Leaser      = (*leasingChecking)(nil)
	_ cairn.Checker     = (*leasingChecking)(nil)
	_ cairn.Claimer     = (*claimingChecking)(nil)
	_ cairn.Checker     = (*claimingChecking)(nil)
)

// withAbilities returns s with exactly the optional abilities of the
// store it wraps.
//
// Go cannot add methods to a value at run time, so there is one type per
// combination: leases (cairn.Leaser, whose fenced appends are sealed like
// Append), claims (cairn.Claimer, which needs leases) and checks
// (cairn.Checker). Sweeper is always there, and so is LocalLocker, whose
// LockFile answers "" over a store without lock files (its documented
// fallback), so that it needs no types of its own.
// TestWrap_KnowsEveryAbility fails when package cairn gains an optional
// interface this does not carry.
func (s *store) withAbilities() Store {
	k, checks := s.inner.(cairn.Checker)
	ck := checker{s: s, k: k}
	l, leases := s.inner.(cairn.Leaser)
	if !leases {
		if checks {
			return &checking{store: s, checker: ck}
		}
		return s
	}
	ls := &leasing{store: s, l: l}
	if c, ok := s.inner.(cairn.Claimer); ok {
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

// checker carries cairn.Checker.
type checker struct {
	s *store
	k cairn.Checker
}

// Check implements cairn.Checker; see (*store).check.
func (c checker) Check(ctx context.Context) (*cairn.CheckReport, error) { return c.s.check(ctx, c.k) }

// LockFile implements cairn.LocalLocker: the wrapped store's lock file,
// which the store shares with every process that opens it, encrypting or
// not; "" when the wrapped store has none.
func (s *store) LockFile(id string) string {
	if l, ok := s.inner.(cairn.LocalLocker); ok {
		return l.LockFile(id)
	}
	return ""
}
