package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

var (
	_ cairn.Leaser   = (*Store)(nil)
	_ driver.Claimer = (*Store)(nil)
)

// leaseStatements are the lease SQL of one schema. Each is one statement,
// so one round trip and one transaction: the row lock of the session
// serialises every lease change and every fenced append of that session.
type leaseStatements struct {
	acquire, renew, release, current, held string
	currents                               string // the live leases of many sessions
	appendFenced, claim                    string
	appendFencedOne                        string // of a single event
}

// leaseSQLCache holds the lease statements of each schema, made once.
var leaseSQLCache sync.Map // schema -> *leaseStatements

// leaseSQL returns the lease statements of the store's schema.
func (s *Store) leaseSQL() *leaseStatements {
	if v, ok := leaseSQLCache.Load(s.schema); ok {
		return v.(*leaseStatements)
	}
	st := newLeaseStatements(s.schema)
	v, _ := leaseSQLCache.LoadOrStore(s.schema, &st)
	return v.(*leaseStatements)
}

func newLeaseStatements(schema string) leaseStatements {
	sessions := pgx.Identifier{schema, "sessions"}.Sanitize()
	events := pgx.Identifier{schema, "events"}.Sanitize()
	token := "nextval('" + pgx.Identifier{schema, "lease_tokens"}.Sanitize() + "'::regclass)"
	// A grant over a lease its holder did not release counts a takeover.
	takeover := "lease_takeovers = s.lease_takeovers + CASE WHEN s.lease_holder <> '' THEN 1 ELSE 0 END"
	fencedTail := func(one bool) string {
		return `
			SELECT EXISTS (SELECT 1 FROM u), s.last_seq, s.lease_token = $12 AND s.lease_holder <> '', ` + heldSQL(events, one) + `
			FROM (SELECT 1) AS one LEFT JOIN ` + sessions + ` s ON s.id = $1 AND (s.expires_at IS NULL OR s.expires_at > $4)`
	}
	return leaseStatements{
		// $1 id, $2 holder, $3 now, $4 expires, $5 force.
		acquire: "UPDATE " + sessions + " s SET lease_holder = $2, lease_token = " + token + ", lease_expires = $4, " + takeover +
			" WHERE id = $1 AND " + liveSQL("$3") + " AND (lease_holder = '' OR lease_expires <= $3 OR $5::boolean)" +
			" RETURNING lease_token, lease_takeovers",
		held: "SELECT lease_holder, lease_expires FROM " + sessions + " WHERE id = $1 AND " + liveSQL("$2"),
		// $1 id, $2 token, $3 now, $4 expires.
		renew: "UPDATE " + sessions + " SET lease_expires = $4" +
			" WHERE id = $1 AND lease_token = $2 AND lease_holder <> '' AND " + liveSQL("$3") + " RETURNING lease_holder, lease_takeovers",
		release: "UPDATE " + sessions + " SET lease_holder = '', lease_expires = NULL" +
			" WHERE id = $1 AND lease_token = $2 AND lease_holder <> '' AND " + liveSQL("$3") + " RETURNING id",
		current: "SELECT lease_holder, lease_token, lease_expires, lease_takeovers FROM " + sessions + " WHERE id = $1 AND " + liveSQL("$2"),
		// $1 ids, $2 now.
		currents: "SELECT id, lease_holder, lease_token, lease_expires, lease_takeovers FROM " + sessions +
			" WHERE id = ANY($1::text[]) AND " + liveSQL("$2") + " AND lease_holder <> '' AND lease_expires > $2",
		// Append's statement with the lease in the UPDATE's condition,
		// and the lease read back to tell a lost lease from a conflict,
		// and whether the session holds the events (a retry).
		appendFenced:    appendSQL(sessions, events, "lease_token = $12 AND lease_holder <> ''", false) + textSQL(schema, 13, false) + fencedTail(false),
		appendFencedOne: appendSQL(sessions, events, "lease_token = $12 AND lease_holder <> ''", true) + textSQL(schema, 13, true) + fencedTail(true),
		// $1 holder, $2 now, $3 expires, $4 statuses, $5 labels.
		claim: `WITH c AS (
				SELECT id FROM ` + sessions + `
				WHERE ` + liveSQL("$2") + ` AND (lease_holder = '' OR lease_expires <= $2)
					AND (cardinality($4::text[]) = 0 OR status = ANY($4::text[]))
					AND labels @> $5::jsonb
				ORDER BY created_at, id
				LIMIT 1
				FOR UPDATE SKIP LOCKED
			)
			UPDATE ` + sessions + ` s SET lease_holder = $1, lease_token = ` + token + `, lease_expires = $3, ` + takeover + `
			FROM c WHERE s.id = c.id
			RETURNING s.id, s.lease_token, s.lease_takeovers`,
	}
}

// Acquire implements cairn.Leaser: one UPDATE that takes the lease only
// when no live lease is set.
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
	for range 3 {
		now := s.opts.Now().UTC()
		exp := now.Add(ttl)
		l := cairn.Lease{Session: id, Holder: holder, Expires: exp}
		err := s.pool.QueryRow(ctx, s.leaseSQL().acquire, id, holder, now, exp, force).Scan(&l.Token, &l.Takeovers)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, translate(err))
		}
		if force {
			// A takeover matches any live session: none was there when
			// the UPDATE ran. Reading why would find a session created
			// since, and its lease, and answer a takeover "held".
			return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, cairn.ErrNotFound)
		}
		var (
			who   string
			until *time.Time
		)
		err = s.pool.QueryRow(ctx, s.leaseSQL().held, id, now).Scan(&who, &until)
		if errors.Is(err, pgx.ErrNoRows) {
			return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, cairn.ErrNotFound)
		}
		if err != nil {
			return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, translate(err))
		}
		if who != "" && until != nil && until.After(now) {
			return cairn.Lease{}, &cairn.LeaseHeldError{Session: id, Holder: who, Expires: until.UTC()}
		}
		// Released between the two statements: try again.
	}
	return cairn.Lease{}, fmt.Errorf("acquire %s: the lease changed hands three times; try again", id)
}

// Renew implements cairn.Leaser.
func (s *Store) Renew(ctx context.Context, lease cairn.Lease, ttl time.Duration) (cairn.Lease, error) {
	if err := s.guard.Lease(lease.Session, lease.Holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	now := s.opts.Now().UTC()
	exp := now.Add(ttl)
	var holder string
	err := s.pool.QueryRow(ctx, s.leaseSQL().renew, lease.Session, lease.Token, now, exp).Scan(&holder, &lease.Takeovers)
	if errors.Is(err, pgx.ErrNoRows) {
		return cairn.Lease{}, fmt.Errorf("renew %s: %w", lease.Session, s.lostOrMissing(ctx, lease.Session, now))
	}
	if err != nil {
		return cairn.Lease{}, fmt.Errorf("renew %s: %w", lease.Session, translate(err))
	}
	lease.Holder, lease.Expires = holder, exp
	return lease, nil
}

// lostOrMissing says why a lease statement matched no row: the session is
// gone (ErrNotFound) or the lease is not the caller's (ErrLeaseLost).
func (s *Store) lostOrMissing(ctx context.Context, id string, now time.Time) error {
	var (
		who   string
		until *time.Time
	)
	err := s.pool.QueryRow(ctx, s.leaseSQL().held, id, now).Scan(&who, &until)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return cairn.ErrNotFound
	case err != nil:
		return translate(err)
	}
	return cairn.ErrLeaseLost
}

// Release implements cairn.Leaser.
func (s *Store) Release(ctx context.Context, lease cairn.Lease) error {
	if err := s.guard.Session(lease.Session); err != nil {
		return err
	}
	now := s.opts.Now().UTC()
	var id string
	err := s.pool.QueryRow(ctx, s.leaseSQL().release, lease.Session, lease.Token, now).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("release %s: %w", lease.Session, s.lostOrMissing(ctx, lease.Session, now))
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", lease.Session, translate(err))
	}
	return nil
}

// CurrentLease implements cairn.Leaser.
func (s *Store) CurrentLease(ctx context.Context, id string) (cairn.Lease, error) {
	if err := s.guard.Session(id); err != nil {
		return cairn.Lease{}, err
	}
	now := s.opts.Now().UTC()
	var (
		l     = cairn.Lease{Session: id}
		until *time.Time
	)
	err := s.pool.QueryRow(ctx, s.leaseSQL().current, id, now).Scan(&l.Holder, &l.Token, &until, &l.Takeovers)
	if errors.Is(err, pgx.ErrNoRows) {
		return cairn.Lease{}, fmt.Errorf("lease of %s: %w", id, cairn.ErrNotFound)
	}
	if err != nil {
		return cairn.Lease{}, fmt.Errorf("lease of %s: %w", id, translate(err))
	}
	if l.Holder == "" || until == nil || !until.After(now) {
		return cairn.Lease{Session: id, Takeovers: l.Takeovers}, nil
	}
	l.Expires = until.UTC()
	return l, nil
}

// maxFencedAttempts bounds the statements of one AppendFenced whose
// session row keeps changing between a statement's snapshot and its lock.
const maxFencedAttempts = 4

// AppendFenced implements cairn.Leaser: Append's one statement, whose
// UPDATE also requires the lease's token, so the check and the write are
// one atomic step under the session's row lock.
func (s *Store) AppendFenced(ctx context.Context, id string, lease cairn.Lease, expectSeq int64, events ...cairn.Event) error {
	a, err := s.newAppend(id, expectSeq, events)
	if err != nil {
		return err
	}
	token := lease.Token
	if lease.Session != id {
		token = -1 // never a session's token
	}
	var (
		ok, mine, held *bool
		cur            *int64
	)
	q := s.leaseSQL().appendFenced
	if a.one {
		q = s.leaseSQL().appendFencedOne
	}
	args := a.args(token)
	for attempt := 0; ; attempt++ {
		err := s.pool.QueryRow(ctx, q, args...).Scan(&ok, &cur, &mine, &held)
		if err != nil {
			return fmt.Errorf("append %s: %w", id, translate(err))
		}
		switch {
		case ok != nil && *ok:
			return nil
		case cur == nil:
			return fmt.Errorf("append %s: %w", id, cairn.ErrNotFound)
		case mine == nil || !*mine:
			return fmt.Errorf("append %s: %w", id, cairn.ErrLeaseLost)
		case *cur != expectSeq:
			// The lease is the caller's and the session at another seq
			// in the statement's snapshot: a retry of an append whose
			// events it holds is already done, anything else a
			// conflict.
			return notAt(id, expectSeq, *cur, held != nil && *held)
		case attempt >= maxFencedAttempts-1:
			return fmt.Errorf("append %s at seq %d: %w (the session changed under the append %d times)", id, expectSeq, cairn.ErrConflict, attempt+1)
		}
		// The row changed between the statement's snapshot and its
		// lock (an append, a lease change or a deletion committed
		// meanwhile): nothing was written; look again, with a new
		// snapshot that tells which.
	}
}

// ClaimNext implements driver.Claimer: the oldest matching session without
// a live lease, locked with FOR UPDATE SKIP LOCKED so that concurrent
// workers pass over each other's candidates instead of queueing on them,
// and leased in the same statement.
func (s *Store) ClaimNext(ctx context.Context, holder string, ttl time.Duration, filter cairn.ListOptions) (cairn.Lease, error) {
	if err := s.guard.Lease("claim", holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	statuses := make([]string, len(filter.Status))
	for i, st := range filter.Status {
		statuses[i] = string(st)
	}
	labels := filter.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	lj, err := json.Marshal(labels)
	if err != nil {
		return cairn.Lease{}, fmt.Errorf("claim: %w", err)
	}
	now := s.opts.Now().UTC()
	exp := now.Add(ttl)
	l := cairn.Lease{Holder: holder, Expires: exp}
	err = s.pool.QueryRow(ctx, s.leaseSQL().claim, holder, now, exp, statuses, string(lj)).Scan(&l.Session, &l.Token, &l.Takeovers)
	if errors.Is(err, pgx.ErrNoRows) {
		return cairn.Lease{}, fmt.Errorf("claim: %w", cairn.ErrNotFound)
	}
	if err != nil {
		return cairn.Lease{}, fmt.Errorf("claim: %w", translate(err))
	}
	return l, nil
}

// CurrentLeases implements cairn.Leaser: one statement, each session found
// by its primary key.
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
	rows, err := s.pool.Query(ctx, s.leaseSQL().currents, ids, s.opts.Now().UTC())
	if err != nil {
		return nil, fmt.Errorf("leases: %w", translate(err))
	}
	defer rows.Close()
	for rows.Next() {
		var l cairn.Lease
		if err := rows.Scan(&l.Session, &l.Holder, &l.Token, &l.Expires, &l.Takeovers); err != nil {
			return nil, fmt.Errorf("leases: %w", translate(err))
		}
		l.Expires = l.Expires.UTC()
		out[l.Session] = l
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("leases: %w", translate(err))
	}
	return out, nil
}
