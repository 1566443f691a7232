package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/group"
	"github.com/cairnhq/cairn/internal/unixnano"
)

// appendReq is one Append waiting for, or in, a group commit.
type appendReq struct {
	ctx       context.Context
	id        string
	expectSeq int64
	events    []cairn.Event
	bodies    []string
	texts     []string // the events' texts to index, "" for none; nil when none has one
	delta     driver.InfoDelta

	done chan error // its result, or errLead: it is the next leader
	err  error      // its result, for the leader's own request
}

// errLead hands the writer to a waiting append.
var errLead = errors.New("lead the next group commit")

// commitQueue holds the appends waiting for the writer.
type commitQueue struct {
	mu      sync.Mutex
	leading bool // an append is running a group commit
	waiting []*appendReq
	gather  *group.Gather // the leader's wait for the last commit's callers
}

// submit runs r in a group commit and returns its result. The first append
// to find the writer idle leads: it commits itself and everything that
// queued meanwhile, then hands the writer to the first append still
// waiting, which leads the next commit.
//
// In a group commit, appends that arrive while the writer is busy wait in
// a queue; the next transaction takes all of them, one after another, and
// one commit (one fsync with synchronous=FULL) makes them all durable.
// Before it takes them, the leader waits briefly for the appends of the
// last commit to come back (group.Gather), so that writers that append
// without pause share one commit instead of taking turns in two. An
// append that fails its checks (a conflict, a missing session) writes
// nothing and the others go on; each caller returns only once the commit
// that holds its events is durable. With a single writer nothing waits:
// the append runs alone in its own transaction, as before.
func (s *Store) submit(r *appendReq) error {
	q := &s.queue
	q.mu.Lock()
	if q.leading {
		r.done = make(chan error, 1)
		q.waiting = append(q.waiting, r)
		q.mu.Unlock()
		q.gather.Joined()
		var err error
		select {
		case err = <-r.done:
		case <-r.ctx.Done():
			q.mu.Lock()
			if i := slices.Index(q.waiting, r); i >= 0 {
				q.waiting = slices.Delete(q.waiting, i, i+1)
				q.mu.Unlock()
				return r.ctx.Err()
			}
			q.mu.Unlock()
			err = <-r.done
		}
		if err != errLead {
			return err
		}
	} else {
		q.leading = true
		q.mu.Unlock()
	}
	q.gather.Wait(q.waitingNow)
	q.mu.Lock()
	batch := append([]*appendReq{r}, q.waiting...)
	q.waiting = nil
	q.mu.Unlock()

	start := time.Now()
	s.commitBatch(batch)
	q.gather.Done(len(batch), time.Since(start))
	texts := 0
	for _, o := range batch {
		if o.err == nil {
			texts += o.textCount()
		}
	}
	s.indexed(r.ctx, texts) // after the timing: the gather waits by commits alone

	q.mu.Lock()
	if len(q.waiting) > 0 {
		next := q.waiting[0]
		q.waiting = q.waiting[1:]
		next.done <- errLead
	} else {
		q.leading = false
	}
	q.mu.Unlock()
	for _, o := range batch[1:] {
		o.done <- o.err
	}
	return r.err
}

// waitingNow is how many appends wait for the writer.
func (q *commitQueue) waitingNow() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

// commitBatch runs the appends of batch in one transaction and sets each
// one's err. An append whose context has ended is left out. The
// transaction itself runs without the callers' contexts: once an append
// is in it, it is committed or failed with the others.
//
// An append that fails its checks (a conflict, a missing session) has
// written nothing when it fails, so the others go on in the same
// transaction. One that fails while writing leaves the transaction in
// doubt: it is rolled back, and each append of the batch runs again in a
// transaction of its own.
func (s *Store) commitBatch(batch []*appendReq) {
	ctx := context.WithoutCancel(batch[0].ctx)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		for _, r := range batch {
			r.err = err
		}
		return
	}
	var ok []*appendReq
	for _, r := range batch {
		if r.err = r.ctx.Err(); r.err != nil {
			continue
		}
		var wrote bool
		if wrote, r.err = s.appendTx(ctx, tx, r); r.err == nil {
			ok = append(ok, r)
		} else if wrote {
			_ = tx.Rollback()
			if len(batch) > 1 {
				s.commitEach(batch)
			}
			return
		}
	}
	if len(ok) == 0 {
		_ = tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		for _, r := range ok {
			r.err = err
		}
	}
}

// commitEach runs each append of batch in a transaction of its own: the
// way back from a batch whose transaction failed while writing.
func (s *Store) commitEach(batch []*appendReq) {
	for _, r := range batch {
		if r.err = r.ctx.Err(); r.err == nil {
			s.commitBatch([]*appendReq{r})
		}
	}
}

// appendTx is one append inside tx: move the session's head row from
// the expected seq to the new last seq (matching only a live session at
// the expected seq), then insert the events and their texts for Search,
// pending (search.go). wrote says whether anything was written:
// an error before that (ErrNotFound, ErrConflict) leaves tx as it was.
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, r *appendReq) (wrote bool, err error) {
	now := s.opts.Now().UTC()
	d := r.delta
	res, err := tx.StmtContext(ctx, s.advance).ExecContext(ctx,
		r.expectSeq+int64(len(r.events)), unixnano.Of(now), unixnano.Of(s.opts.ExpiresAt(now)),
		d.Steps, string(d.Status), d.HasMessage, d.FirstMessage,
		s.opts.Namespace, r.id, r.expectSeq, unixnano.Of(now))
	if err != nil {
		return true, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return true, err
	} else if n == 0 {
		return false, s.whyNot(ctx, tx, r, now)
	}
	insert := tx.StmtContext(ctx, s.insert)
	for i, e := range r.events {
		if _, err := insert.ExecContext(ctx, s.opts.Namespace, r.id, e.Seq, r.bodies[i]); err != nil {
			return true, err
		}
	}
	if r.texts == nil {
		return true, nil
	}
	index := tx.StmtContext(ctx, s.index)
	for i, e := range r.events {
		if r.texts[i] == "" {
			continue
		}
		if _, err := index.ExecContext(ctx, s.opts.Namespace, r.id, e.Seq, r.texts[i]); err != nil {
			return true, err
		}
	}
	return true, nil
}

// whyNot tells why the head row of r's session did not move: ErrNotFound
// for a missing or expired session, the *driver.DamagedError of a session
// whose row records damage (migration 0006), nil for a retried append
// (below), else ErrConflict with the last seq. It reads inside r's transaction, which
// holds the database's write lock since the UPDATE: nothing can have
// changed the session between the two.
//
// An append whose events the session already holds, at the same seqs and
// byte for byte the same (the envelope holds version, seq, time, kind, run
// and data), whether or not others were appended after them, is a retry
// of one whose reply was lost: it is done, and writes nothing. Only this
// path, a conflict, reads those events back.
func (s *Store) whyNot(ctx context.Context, tx *sql.Tx, r *appendReq, now time.Time) error {
	var (
		last, exp int64
		damage    string
	)
	err := tx.StmtContext(ctx, s.head).QueryRowContext(ctx, s.opts.Namespace, r.id).Scan(&last, &exp, &damage)
	switch {
	case errors.Is(err, sql.ErrNoRows) || err == nil && expired(exp, now):
		return cairn.ErrNotFound
	case err != nil:
		return err
	case damage != "":
		return s.recorded(r.id, damage)
	}
	if r.expectSeq >= 0 && last >= r.expectSeq+int64(len(r.events)) {
		same, err := s.holds(ctx, tx, r)
		if err != nil || same {
			return err
		}
	}
	return fmt.Errorf("%w: last seq is %d, not %d", cairn.ErrConflict, last, r.expectSeq)
}

// holds reports whether the session's events at the seqs after
// r.expectSeq are exactly r's.
func (s *Store) holds(ctx context.Context, tx *sql.Tx, r *appendReq) (bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT envelope FROM events
		WHERE namespace = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq`,
		s.opts.Namespace, r.id, r.expectSeq, r.expectSeq+int64(len(r.events)))
	if err != nil {
		return false, err
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var raw sql.RawBytes
		if err := rows.Scan(&raw); err != nil {
			return false, err
		}
		if i >= len(r.bodies) || string(raw) != r.bodies[i] {
			return false, rows.Close()
		}
		i++
	}
	return i == len(r.bodies), rows.Err()
}
