package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Create implements cairn.Store. In one transaction (one round trip) it
// purges an expired session with the same ID, whose events go with it, and
// inserts the new one; a live session with the ID makes it ErrExists.
func (s *Store) Create(ctx context.Context, meta cairn.SessionMeta) error {
	if err := s.guard.Session(meta.ID); err != nil {
		return err
	}
	now := s.opts.Now().UTC()
	created := meta.CreatedAt
	if created.IsZero() {
		created = now
	}
	labels := meta.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	// A batch runs as one implicit transaction. The purge and the insert
	// are separate statements so that the insert sees the purge.
	b := &pgx.Batch{}
	b.Queue(s.sql.purge, meta.ID, now)
	b.Queue(s.sql.create, meta.ID, created.UTC(), now, nullTime(s.opts.ExpiresAt(now)), string(cairn.StatusNew), labels)
	br := s.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", meta.ID, translate(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("create %s: %w", meta.ID, cairn.ErrExists)
	}
	return nil
}

// Append implements cairn.Store. After driver.CheckAppend it is one SQL
// statement, so one round trip and one transaction: an UPDATE of the
// session row that matches only at the expected seq on a live session, and
// the INSERTs of the events and of their text to search fed by that
// UPDATE. Its cost does not depend on how long the history is.
func (s *Store) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	a, err := s.newAppend(id, expectSeq, events)
	if err != nil {
		return err
	}
	q := s.sql.append
	if a.one {
		q = s.sql.appendOne
	}
	var (
		ok   bool
		snap []int64 // the last seq, and 1 when the events are held there
	)
	err = s.pool.QueryRow(ctx, q, a.args()...).Scan(&ok, &snap)
	if err != nil {
		return fmt.Errorf("append %s: %w", id, translate(err))
	}
	switch {
	case ok:
		return nil
	case len(snap) != 2:
		// No live session in the statement's snapshot: the append takes
		// effect there, before a Create that may have come since.
		return fmt.Errorf("append %s: %w", id, cairn.ErrNotFound)
	case snap[0] != expectSeq:
		// The snapshot had the session at another seq: a retry of an
		// append whose events it holds is already done, anything else
		// a conflict, both decided there.
		return notAt(id, expectSeq, snap[0], snap[1] == 1)
	}
	// The snapshot had the session at expectSeq, yet the UPDATE matched
	// nothing: a transaction that committed while it ran moved it on or
	// deleted it.
	return s.whyNot(ctx, id, expectSeq, a.envs, a.now)
}

// appendArgs is what the statement of an append (Append's, or
// AppendFenced's) is given, worked out once from its checked events.
type appendArgs struct {
	envs   [][]byte  // the events' envelopes
	one    bool      // a single event: the statement of one, whose parameters are not arrays
	now    time.Time // the time of the append
	events []any     // the parameters from the session's ID to the events' envelopes
	texts  []any     // the parameters of the events' text to search
}

// newAppend checks the events of an append to session id at expectSeq, as
// driver.Guard.Append does, and works out its statement's parameters.
func (s *Store) newAppend(id string, expectSeq int64, events []cairn.Event) (*appendArgs, error) {
	events, err := s.guard.Append(s.opts.Limits, id, expectSeq, events)
	if err != nil {
		return nil, err
	}
	seqs, envs, err := encodeAll(events)
	if err != nil {
		return nil, fmt.Errorf("append %s: %w", id, err)
	}
	txtSeqs, txtTSVs, txtLens := textArgs(events)
	now := s.opts.Now().UTC()
	d := driver.Summarize(events)
	one := len(events) == 1
	evSeqs, evEnvs := any(seqs), any(envs)
	if one {
		evSeqs, evEnvs = seqs[0], envs[0]
	}
	return &appendArgs{
		envs: envs,
		one:  one,
		now:  now,
		events: []any{
			id, expectSeq, expectSeq + int64(len(events)), now, nullTime(s.opts.ExpiresAt(now)),
			d.Steps, string(d.Status), d.HasMessage, d.FirstMessage,
			evSeqs, evEnvs,
		},
		texts: []any{txtSeqs, txtTSVs, txtLens},
	}, nil
}

// args returns the statement's parameters in order, with more (the lease
// token of AppendFenced's statement) between the events and their text.
func (a *appendArgs) args(more ...any) []any {
	return slices.Concat(a.events, more, a.texts)
}

// notAt is the answer to an append at expectSeq whose statement's snapshot
// had the session at seq cur, another: nil when the session held the
// append's events at their seqs there (held: a retry, already done),
// ErrConflict otherwise.
func notAt(id string, expectSeq, cur int64, held bool) error {
	if held {
		return nil
	}
	return fmt.Errorf("append %s at seq %d: %w (the last seq is %d)", id, expectSeq, cairn.ErrConflict, cur)
}

// whyNot says why an append of the events whose envelopes are envs, at
// expectSeq, matched no session row although its statement's snapshot had
// the session live at expectSeq: a transaction that committed while it ran
// moved the session on or deleted it. One read, made only on this path,
// tells: nil when the session holds exactly these envelopes at these seqs,
// whether or not other events follow them (a retry of an append whose
// reply was lost, or the append sent before it, landed); ErrNotFound for a
// session missing or expired now, or at expectSeq again (a session's seq
// never goes back, so it was deleted and created again since: missing for
// a moment while the call ran); ErrConflict otherwise, at the seq read.
func (s *Store) whyNot(ctx context.Context, id string, expectSeq int64, envs [][]byte, now time.Time) error {
	last := expectSeq + int64(len(envs))
	var (
		cur  int64
		held [][]byte
	)
	err := s.pool.QueryRow(ctx, s.sql.tail, id, now, expectSeq, last).Scan(&cur, &held)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("append %s: %w", id, cairn.ErrNotFound)
	case err != nil:
		return fmt.Errorf("append %s: %w", id, translate(err))
	case expectSeq >= 0 && cur >= last && slices.EqualFunc(held, envs, bytes.Equal):
		return nil
	case cur == expectSeq:
		return fmt.Errorf("append %s: %w (deleted and created again while the append ran)", id, cairn.ErrNotFound)
	}
	return fmt.Errorf("append %s at seq %d: %w (the last seq is %d)", id, expectSeq, cairn.ErrConflict, cur)
}

// Delete implements cairn.Store. One statement deletes the session row and,
// through the foreign keys' ON DELETE CASCADE, every event of it, its text
// to search and its snapshot, in one transaction. An Append racing with it either commits first (and its
// events are deleted too) or finds no session row (ErrNotFound).
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.guard.Session(id); err != nil {
		return err
	}
	var live bool
	err := s.pool.QueryRow(ctx, s.sql.del, id, s.opts.Now().UTC()).Scan(&live)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !live {
		// An expired session is purged, but counts as not there.
		return fmt.Errorf("delete %s: %w", id, cairn.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", id, translate(err))
	}
	return nil
}

// SweepBatch is how many expired sessions Sweep deletes in one
// statement (its own transaction). Deleting a session deletes its events
// through the foreign key's cascade, the larger part of the cost: a batch
// of 4-event sessions takes a few milliseconds, and other transactions
// never queue behind a long one.
const SweepBatch = 256

// Sweep implements driver.Sweeper: it deletes every session of the namespace
// that had expired on the store's clock when it started, with its events,
// SweepBatch sessions per transaction, and returns how many it deleted.
// Expired sessions are invisible without it; Sweep only frees their space
// (PostgreSQL's autovacuum reclaims it for reuse). If it fails part way,
// it returns what it deleted so far with the error.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	now := s.opts.Now().UTC()
	total := 0
	from := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	for {
		var (
			n    int
			last *time.Time
		)
		if err := s.pool.QueryRow(ctx, s.sql.sweep, now, SweepBatch, from).Scan(&n, &last); err != nil {
			return total, fmt.Errorf("sweep: %w", translate(err))
		}
		total += n
		if n < SweepBatch || last == nil {
			return total, nil
		}
		from = *last
	}
}

// CountExpired returns how many sessions of the namespace have expired on
// the store's clock: what Sweep would delete now, counted through the
// expiry index without deleting anything.
func (s *Store) CountExpired(ctx context.Context) (int, error) {
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	var n int
	if err := s.pool.QueryRow(ctx, s.sql.countExpired, s.opts.Now().UTC()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count expired: %w", translate(err))
	}
	return n, nil
}

// nullTime is nil (SQL NULL) for the zero time, t otherwise.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// encodeAll returns the seqs and envelopes of events, each envelope as
// driver.AppendEnvelope writes it, all cut from one buffer.
func encodeAll(events []cairn.Event) ([]int64, [][]byte, error) {
	seqs := make([]int64, len(events))
	envs := make([][]byte, len(events))
	n := 0
	for _, e := range events {
		n += len(e.Data) + len(e.Kind) + len(e.Run) + 112
	}
	buf := make([]byte, 0, n)
	for i, e := range events {
		start := len(buf)
		var err error
		if buf, err = driver.AppendEnvelope(buf, e); err != nil {
			return nil, nil, err
		}
		seqs[i], envs[i] = e.Seq, buf[start:len(buf):len(buf)]
	}
	return seqs, envs, nil
}
