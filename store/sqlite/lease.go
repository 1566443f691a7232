package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/unixnano"
)

var _ cairn.Leaser = (*Store)(nil)

// leaseRow is the lease part of a session row.
type leaseRow struct {
	holder    string
	token     int64
	expires   int64
	takeovers int64
}

// readLease reads the lease of a live session inside tx.
func (s *Store) readLease(ctx context.Context, tx *sql.Tx, id string, now time.Time) (leaseRow, error) {
	var (
		l   leaseRow
		exp int64
	)
	err := tx.QueryRowContext(ctx, `SELECT expires_at, lease_holder, lease_token, lease_expires
		FROM sessions WHERE namespace = ? AND id = ?`, s.opts.Namespace, id).Scan(&exp, &l.holder, &l.token, &l.expires)
	if errors.Is(err, sql.ErrNoRows) || err == nil && expired(exp, now) {
		return l, cairn.ErrNotFound
	}
	return l, err
}

func (l leaseRow) live(now time.Time) bool { return l.holder != "" && l.expires > unixnano.Of(now) }

// Acquire implements cairn.Leaser.
//
// Leases live in the session's row (lease_holder, lease_token,
// lease_expires, lease_takeovers). Every lease change and every fenced
// append is one transaction on the one writer connection, so the lease
// check and the append are one atomic step.
//
// A lease guards against a second writer on the same database file, from
// this process or another. Between processes on one machine the command
// line adds an operating-system lock on a file beside the database, which
// frees the session at once when its process dies, where a lease would
// have to expire first.
func (s *Store) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	return s.acquire(ctx, id, holder, ttl, false)
}

// Takeover implements cairn.Leaser.
func (s *Store) Takeover(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	return s.acquire(ctx, id, holder, ttl, true)
}

func (s *Store) acquire(ctx context.Context, id, holder string, ttl time.Duration, force bool) (cairn.Lease, error) {
	if err := s.guard.Lease(id, holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	if d := s.damage.of(id); d != nil {
		return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, d)
	}
	var lease cairn.Lease
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		now := s.opts.Now().UTC()
		cur, err := s.readLease(ctx, tx, id, now)
		if err != nil {
			return err
		}
		if cur.live(now) && !force {
			return &cairn.LeaseHeldError{Session: id, Holder: cur.holder, Expires: unixnano.Time(cur.expires)}
		}
		var tok int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO lease_tokens (namespace, last) VALUES (?, 1)
			ON CONFLICT (namespace) DO UPDATE SET last = last + 1 RETURNING last`, s.opts.Namespace).Scan(&tok); err != nil {
			return err
		}
		exp := now.Add(ttl)
		lease = cairn.Lease{Session: id, Holder: holder, Token: tok, Expires: exp}
		// A lease its holder did not release counts a takeover.
		return tx.QueryRowContext(ctx, `UPDATE sessions SET lease_holder = ?, lease_token = ?, lease_expires = ?,
			lease_takeovers = lease_takeovers + CASE WHEN lease_holder <> '' THEN 1 ELSE 0 END
			WHERE namespace = ? AND id = ? RETURNING lease_takeovers`,
			holder, tok, unixnano.Of(exp), s.opts.Namespace, id).Scan(&lease.Takeovers)
	})
	if err != nil {
		var held *cairn.LeaseHeldError
		if errors.As(err, &held) {
			return cairn.Lease{}, err
		}
		return cairn.Lease{}, s.fail("acquire", id, err)
	}
	return lease, nil
}

// held checks, inside tx, that lease is still the session's.
func (s *Store) held(ctx context.Context, tx *sql.Tx, id string, lease cairn.Lease) error {
	cur, err := s.readLease(ctx, tx, id, s.opts.Now())
	if err != nil {
		return err
	}
	if cur.holder == "" || cur.token != lease.Token || lease.Session != id {
		return cairn.ErrLeaseLost
	}
	return nil
}

// Renew implements cairn.Leaser.
func (s *Store) Renew(ctx context.Context, lease cairn.Lease, ttl time.Duration) (cairn.Lease, error) {
	if err := s.guard.Lease(lease.Session, lease.Holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	exp := s.opts.Now().UTC().Add(ttl)
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := s.held(ctx, tx, lease.Session, lease); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `UPDATE sessions SET lease_expires = ? WHERE namespace = ? AND id = ?
			RETURNING lease_takeovers`, unixnano.Of(exp), s.opts.Namespace, lease.Session).Scan(&lease.Takeovers)
	})
	if err != nil {
		return cairn.Lease{}, s.leaseFail("renew", lease.Session, err)
	}
	lease.Expires = exp
	return lease, nil
}

// leaseFail wraps a lease error, keeping ErrLeaseLost.
func (s *Store) leaseFail(op, id string, err error) error {
	if errors.Is(err, cairn.ErrLeaseLost) {
		return fmt.Errorf("%s %s: %w", op, id, err)
	}
	return s.fail(op, id, err)
}

// Release implements cairn.Leaser.
func (s *Store) Release(ctx context.Context, lease cairn.Lease) error {
	if err := s.guard.Session(lease.Session); err != nil {
		return err
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := s.held(ctx, tx, lease.Session, lease); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET lease_holder = '', lease_expires = 0 WHERE namespace = ? AND id = ?`,
			s.opts.Namespace, lease.Session)
		return err
	})
	if err != nil {
		return s.leaseFail("release", lease.Session, err)
	}
	return nil
}

// CurrentLease implements cairn.Leaser.
func (s *Store) CurrentLease(ctx context.Context, id string) (cairn.Lease, error) {
	if err := s.guard.Session(id); err != nil {
		return cairn.Lease{}, err
	}
	var (
		exp int64
		l   leaseRow
	)
	now := s.opts.Now()
	err := s.r.QueryRowContext(ctx, `SELECT expires_at, lease_holder, lease_token, lease_expires, lease_takeovers
		FROM sessions WHERE namespace = ? AND id = ?`, s.opts.Namespace, id).Scan(&exp, &l.holder, &l.token, &l.expires, &l.takeovers)
	if errors.Is(err, sql.ErrNoRows) || err == nil && expired(exp, now) {
		return cairn.Lease{}, fmt.Errorf("lease of %s: %w", id, cairn.ErrNotFound)
	}
	if err != nil {
		return cairn.Lease{}, s.fail("lease of", id, err)
	}
	if !l.live(now) {
		return cairn.Lease{Session: id, Takeovers: l.takeovers}, nil
	}
	return cairn.Lease{Session: id, Holder: l.holder, Token: l.token, Expires: unixnano.Time(l.expires), Takeovers: l.takeovers}, nil
}

// AppendFenced implements cairn.Leaser: in one transaction, the lease
// check, then Append's own steps.
func (s *Store) AppendFenced(ctx context.Context, id string, lease cairn.Lease, expectSeq int64, events ...cairn.Event) error {
	events, err := s.guard.Append(s.opts.Limits, id, expectSeq, events)
	if err != nil {
		return err
	}
	if err := s.writable(id); err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	bodies, err := envelopes(events)
	if err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	r := &appendReq{ctx: ctx, id: id, expectSeq: expectSeq, events: events, bodies: bodies,
		texts: searchTexts(events), delta: driver.Summarize(events)}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := s.held(ctx, tx, id, lease); err != nil {
			return err
		}
		_, err := s.appendTx(ctx, tx, r)
		return err
	})
	if err != nil {
		return s.leaseFail("append", id, err)
	}
	s.indexed(ctx, r.textCount())
	return nil
}

// CurrentLeases implements cairn.Leaser: one query, the IDs passed as one
// JSON array and each session read by its key.
func (s *Store) CurrentLeases(ctx context.Context, ids []string) (map[string]cairn.Lease, error) {
	for _, id := range ids {
		if err := s.guard.Session(id); err != nil {
			return nil, err
		}
	}
	out := map[string]cairn.Lease{}
	if len(ids) == 0 {
		return out, s.guard.Check()
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	now := unixnano.Of(s.opts.Now())
	rows, err := s.r.QueryContext(ctx, `SELECT id, lease_holder, lease_token, lease_expires, lease_takeovers FROM sessions
		WHERE namespace = ? AND id IN (SELECT value FROM json_each(?)) AND (expires_at = 0 OR expires_at > ?)
			AND lease_holder <> '' AND lease_expires > ?`, s.opts.Namespace, string(list), now, now)
	if err != nil {
		return nil, s.fail("leases", "", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			l   cairn.Lease
			exp int64
		)
		if err := rows.Scan(&l.Session, &l.Holder, &l.Token, &exp, &l.Takeovers); err != nil {
			return nil, s.fail("leases", "", err)
		}
		l.Expires = unixnano.Time(exp)
		out[l.Session] = l
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("leases", "", err)
	}
	return out, nil
}
