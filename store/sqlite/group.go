package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cairnhq/cairn"
)

// Group commit. Appends that arrive while the writer is busy wait in a
// queue; the next transaction takes all of them, each inside a savepoint of
// its own, and one commit (one fsync with synchronous=FULL) makes them all
// durable. An append that fails (a conflict, a missing session) is rolled
// back to its savepoint and the others go on; each caller returns only once
// the commit that holds its events is durable. With a single writer nothing
// waits: the append runs alone in its own transaction, as before.

// appendReq is one Append waiting for, or in, a group commit.
type appendReq struct {
	ctx       context.Context
	id        string
	expectSeq int64
	events    []cairn.Event
	bodies    []string
	delta     cairn.InfoDelta

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
}

// submit runs r in a group commit and returns its result. The first append
// to find the writer idle leads: it commits itself and everything that
// queued meanwhile, then hands the writer to the first append still
// waiting, which leads the next commit.
func (s *Store) submit(r *appendReq) error {
	q := &s.queue
	q.mu.Lock()
	if q.leading {
		r.done = make(chan error, 1)
		q.waiting = append(q.waiting, r)
		q.mu.Unlock()
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
	q.mu.Lock()
	batch := append([]*appendReq{r}, q.waiting...)
	q.waiting = nil
	q.mu.Unlock()

	s.commitBatch(batch)

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

// commitBatch runs the appends of batch in one transaction and sets each
// one's err. An append whose context has ended is left out. The
// transaction itself runs without the callers' contexts: once an append
// is in it, it is committed or failed with the others.
func (s *Store) commitBatch(batch []*appendReq) {
	ctx := context.WithoutCancel(batch[0].ctx)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		for _, r := range batch {
			r.err = err
		}
		return
	}
	savepoints := len(batch) > 1
	var ok []*appendReq
	for _, r := range batch {
		if r.err = r.ctx.Err(); r.err != nil {
			continue
		}
		if !savepoints {
			r.err = s.appendTx(ctx, tx, r)
		} else if r.err = execTx(ctx, tx, `SAVEPOINT append`); r.err == nil {
			if r.err = s.appendTx(ctx, tx, r); r.err != nil {
				if err := execTx(ctx, tx, `ROLLBACK TO append`, `RELEASE append`); err != nil {
					_ = tx.Rollback()
					for _, o := range batch {
						if o.err == nil {
							o.err = fmt.Errorf("roll back to savepoint: %w", err)
						}
					}
					return
				}
			} else {
				r.err = execTx(ctx, tx, `RELEASE append`)
			}
		}
		if r.err == nil {
			ok = append(ok, r)
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

func execTx(ctx context.Context, tx *sql.Tx, stmts ...string) error {
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// appendTx is one append inside tx: read the session's head row by its
// key, insert the events, update the head row.
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, r *appendReq) error {
	var (
		info   cairn.SessionInfo
		exp    int64
		status string
	)
	err := tx.StmtContext(ctx, s.head).QueryRowContext(ctx, s.opts.Namespace, r.id).
		Scan(&info.LastSeq, &exp, &info.Steps, &status, &info.FirstMessage)
	if errors.Is(err, sql.ErrNoRows) {
		return cairn.ErrNotFound
	}
	if err != nil {
		return err
	}
	now := s.opts.Now().UTC()
	if expired(exp, now) {
		return cairn.ErrNotFound
	}
	if info.LastSeq != r.expectSeq {
		return fmt.Errorf("%w: last seq is %d, not %d", cairn.ErrConflict, info.LastSeq, r.expectSeq)
	}
	insert := tx.StmtContext(ctx, s.insert)
	for i, e := range r.events {
		if _, err := insert.ExecContext(ctx, s.opts.Namespace, r.id, e.Seq, r.bodies[i]); err != nil {
			return err
		}
	}
	info.Status = cairn.Status(status)
	r.delta.Apply(&info, r.expectSeq+int64(len(r.events)), now)
	_, err = tx.StmtContext(ctx, s.update).ExecContext(ctx,
		info.LastSeq, nanos(info.UpdatedAt), nanos(s.opts.ExpiresAt(now)),
		info.Steps, string(info.Status), info.FirstMessage, s.opts.Namespace, r.id)
	return err
}
