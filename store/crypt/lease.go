package crypt

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// leasing is a Store over an inner store with leases.
type leasing struct {
	*store
	l cairn.Leaser
}

// Acquire implements cairn.Leaser. A store whose key is not one of the
// namespace's refuses it (a *WrongKeyError), as it refuses writes: a
// holder that cannot read or write the session would only hold it back.
func (s *leasing) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	if err := s.writable(ctx); err != nil {
		return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, err)
	}
	return s.l.Acquire(ctx, id, holder, ttl)
}

// Takeover implements cairn.Leaser; a store whose key is not one of the
// namespace's refuses it, as Acquire.
func (s *leasing) Takeover(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	if err := s.writable(ctx); err != nil {
		return cairn.Lease{}, fmt.Errorf("takeover %s: %w", id, err)
	}
	return s.l.Takeover(ctx, id, holder, ttl)
}

// Renew implements cairn.Leaser.
func (s *leasing) Renew(ctx context.Context, lease cairn.Lease, ttl time.Duration) (cairn.Lease, error) {
	return s.l.Renew(ctx, lease, ttl)
}

// Release implements cairn.Leaser.
func (s *leasing) Release(ctx context.Context, lease cairn.Lease) error {
	return s.l.Release(ctx, lease)
}

// CurrentLease implements cairn.Leaser.
func (s *leasing) CurrentLease(ctx context.Context, id string) (cairn.Lease, error) {
	return s.l.CurrentLease(ctx, id)
}

// AppendFenced implements cairn.Leaser: Append, sealed, fenced by lease.
func (s *leasing) AppendFenced(ctx context.Context, id string, lease cairn.Lease, expectSeq int64, events ...cairn.Event) error {
	if s.ring == nil {
		if err := s.guardNamespace(ctx); err != nil {
			return fmt.Errorf("append %s: %w", id, err)
		}
		if err := s.guardAppend(ctx, id, expectSeq); err != nil {
			return err
		}
		return s.l.AppendFenced(ctx, id, lease, expectSeq, events...)
	}
	return s.append(ctx, id, expectSeq, events, func(sealed []cairn.Event) error {
		return s.l.AppendFenced(ctx, id, lease, expectSeq, sealed...)
	})
}

// claiming is a Store over an inner store with leases and claims.
type claiming struct {
	*leasing
	c driver.Claimer
}

// ClaimNext implements driver.Claimer. The filter's status and labels are
// clear in the inner store, so it filters there. A store whose key is not
// one of the namespace's refuses it, as Acquire.
func (s *claiming) ClaimNext(ctx context.Context, holder string, ttl time.Duration, filter cairn.ListOptions) (cairn.Lease, error) {
	if err := s.writable(ctx); err != nil {
		return cairn.Lease{}, fmt.Errorf("claim: %w", err)
	}
	return s.c.ClaimNext(ctx, holder, ttl, filter)
}

// CurrentLeases implements cairn.Leaser.
func (s *leasing) CurrentLeases(ctx context.Context, ids []string) (map[string]cairn.Lease, error) {
	return s.l.CurrentLeases(ctx, ids)
}
