package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

var (
	_ cairn.Leaser   = (*Store)(nil)
	_ driver.Claimer = (*Store)(nil)
)

// leases are the sessions' leases, keyed by the session they belong to, so
// that deleting a session drops its lease with it. Guarded by the DB's mu.
var leases = map[*session]*cairn.Lease{}

// lastToken numbers leases across every DB of the process, so a token is
// never reused, not even by a session deleted and created again.
var lastToken atomic.Int64

// Acquire implements cairn.Leaser.
func (s *Store) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	return s.acquire(id, holder, ttl, false)
}

// Takeover implements cairn.Leaser.
func (s *Store) Takeover(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	return s.acquire(id, holder, ttl, true)
}

func (s *Store) acquire(id, holder string, ttl time.Duration, force bool) (cairn.Lease, error) {
	if err := s.guard.Lease(id, holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	ss := s.live(id)
	if ss == nil {
		return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, cairn.ErrNotFound)
	}
	return s.grant(ss, id, holder, ttl, force)
}

// grant gives ss's lease to holder unless a live lease stands in the way,
// with db.mu held.
func (s *Store) grant(ss *session, id, holder string, ttl time.Duration, force bool) (cairn.Lease, error) {
	now := s.opts.Now().UTC()
	if l := leases[ss]; l != nil && l.Holder != "" && now.Before(l.Expires) && !force {
		return cairn.Lease{}, &cairn.LeaseHeldError{Session: id, Holder: l.Holder, Expires: l.Expires}
	}
	l := cairn.Lease{Session: id, Holder: holder, Token: lastToken.Add(1), Expires: now.Add(ttl)}
	if prev := leases[ss]; prev != nil {
		l.Takeovers = prev.Takeovers
		if prev.Holder != "" {
			l.Takeovers++
		}
	}
	leases[ss] = &l
	return l, nil
}

// held returns ss's lease when it is still lease's, with db.mu held.
func held(ss *session, lease cairn.Lease) *cairn.Lease {
	l := leases[ss]
	if l == nil || l.Holder == "" || l.Token != lease.Token {
		return nil
	}
	return l
}

// Renew implements cairn.Leaser.
func (s *Store) Renew(ctx context.Context, lease cairn.Lease, ttl time.Duration) (cairn.Lease, error) {
	if err := s.guard.Lease(lease.Session, lease.Holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	ss := s.live(lease.Session)
	if ss == nil {
		return cairn.Lease{}, fmt.Errorf("renew %s: %w", lease.Session, cairn.ErrNotFound)
	}
	l := held(ss, lease)
	if l == nil {
		return cairn.Lease{}, fmt.Errorf("renew %s: %w", lease.Session, cairn.ErrLeaseLost)
	}
	l.Expires = s.opts.Now().UTC().Add(ttl)
	return *l, nil
}

// Release implements cairn.Leaser.
func (s *Store) Release(ctx context.Context, lease cairn.Lease) error {
	if err := s.guard.Session(lease.Session); err != nil {
		return err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	ss := s.live(lease.Session)
	if ss == nil {
		return fmt.Errorf("release %s: %w", lease.Session, cairn.ErrNotFound)
	}
	l := held(ss, lease)
	if l == nil {
		return fmt.Errorf("release %s: %w", lease.Session, cairn.ErrLeaseLost)
	}
	l.Holder, l.Expires = "", time.Time{}
	return nil
}

// CurrentLease implements cairn.Leaser.
func (s *Store) CurrentLease(ctx context.Context, id string) (cairn.Lease, error) {
	if err := s.guard.Session(id); err != nil {
		return cairn.Lease{}, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	ss := s.live(id)
	if ss == nil {
		return cairn.Lease{}, fmt.Errorf("lease of %s: %w", id, cairn.ErrNotFound)
	}
	l := leases[ss]
	switch {
	case l == nil:
		return cairn.Lease{Session: id}, nil
	case l.Holder != "" && s.opts.Now().Before(l.Expires):
		return *l, nil
	}
	return cairn.Lease{Session: id, Takeovers: l.Takeovers}, nil
}

// AppendFenced implements cairn.Leaser: Append, with the lease checked
// under the same lock.
func (s *Store) AppendFenced(ctx context.Context, id string, lease cairn.Lease, expectSeq int64, events ...cairn.Event) error {
	return s.append(ctx, id, &lease, expectSeq, events)
}

// ClaimNext implements driver.Claimer.
func (s *Store) ClaimNext(ctx context.Context, holder string, ttl time.Duration, filter cairn.ListOptions) (cairn.Lease, error) {
	if err := s.guard.Check(); err != nil {
		return cairn.Lease{}, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	filter.Cursor, filter.Limit = "", 0
	now := s.opts.Now()
	var cands []*session
	for id := range s.ns() {
		ss := s.live(id)
		if ss == nil || !driver.Match(filter, ss.info) {
			continue
		}
		if l := leases[ss]; l != nil && l.Holder != "" && now.Before(l.Expires) {
			continue
		}
		cands = append(cands, ss)
	}
	if len(cands) == 0 {
		return cairn.Lease{}, fmt.Errorf("claim: %w", cairn.ErrNotFound)
	}
	ss := slices.MinFunc(cands, func(a, b *session) int {
		if c := a.info.CreatedAt.Compare(b.info.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.info.ID, b.info.ID)
	})
	if err := driver.CheckLease(ss.info.ID, holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	return s.grant(ss, ss.info.ID, holder, ttl, false)
}

// CurrentLeases implements cairn.Leaser.
func (s *Store) CurrentLeases(ctx context.Context, ids []string) (map[string]cairn.Lease, error) {
	return driver.CurrentLeases(ctx, s, ids)
}
