package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/envsum"
	"github.com/cairnhq/cairn/internal/unixnano"
)

// Create implements cairn.Store. A session whose TTL has passed but that
// was not swept yet is erased first, so its ID is free again.
func (s *Store) Create(ctx context.Context, meta cairn.SessionMeta) error {
	if err := s.guard.Session(meta.ID); err != nil {
		return err
	}
	labels, err := json.Marshal(cloneLabels(meta.Labels))
	if err != nil {
		return fmt.Errorf("create %s: labels: %w", meta.ID, err)
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		now := s.opts.Now().UTC()
		var exp int64
		err := tx.QueryRowContext(ctx, `SELECT expires_at FROM sessions WHERE namespace = ? AND id = ?`,
			s.opts.Namespace, meta.ID).Scan(&exp)
		switch {
		case err == nil && !expired(exp, now):
			return cairn.ErrExists
		case err == nil:
			if err := s.erase(ctx, tx, meta.ID); err != nil {
				return err
			}
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		created := meta.CreatedAt
		if created.IsZero() {
			created = now
		}
		s.damage.forget(meta.ID)
		_, err = tx.ExecContext(ctx, `INSERT INTO sessions
			(namespace, id, created_at, updated_at, expires_at, status, steps, first_message, labels, last_seq)
			VALUES (?, ?, ?, ?, ?, ?, 0, '', ?, 0)`,
			s.opts.Namespace, meta.ID, unixnano.Of(created), unixnano.Of(now), unixnano.Of(s.opts.ExpiresAt(now)),
			string(cairn.StatusNew), string(labels))
		if err != nil || len(meta.Labels) == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO session_labels (namespace, session_id, key, value, updated_at)
			SELECT ?, ?, key, value, ? FROM json_each(?)`, s.opts.Namespace, meta.ID, unixnano.Of(now), string(labels))
		return err
	})
	return s.fail("create", meta.ID, err)
}

// Append implements cairn.Store. It runs in one immediate transaction:
// read the session's head row by its key, insert the events and the texts
// that Search finds them by, update the head row. Nothing in it reads or
// counts earlier events, so its cost does not grow with the history.
// Appends from many goroutines that arrive together share one transaction
// and one commit (see submit); one that fails its checks writes nothing,
// so it leaves the others be.
func (s *Store) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	events, err := s.guard.Append(s.opts.Limits, id, expectSeq, events)
	if err != nil {
		return err
	}
	bodies, err := envelopes(events)
	if err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.writable(id); err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	err = s.submit(&appendReq{ctx: ctx, id: id, expectSeq: expectSeq, events: events, bodies: bodies,
		texts: searchTexts(events), delta: driver.Summarize(events)})
	return s.fail("append", id, err)
}

// Delete implements cairn.Store. The session's events, their texts in the
// search index, its snapshot and its row go in one transaction. With
// secure_delete on, SQLite overwrites the freed space in the database
// file (and FTS5's secure-delete takes the texts' tokens out of the
// index); copies of the pages may stay in the WAL file until the next
// checkpoint.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.guard.Session(id); err != nil {
		return err
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var exp int64
		err := tx.QueryRowContext(ctx, `SELECT expires_at FROM sessions WHERE namespace = ? AND id = ?`,
			s.opts.Namespace, id).Scan(&exp)
		if errors.Is(err, sql.ErrNoRows) {
			return cairn.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := s.erase(ctx, tx, id); err != nil {
			return err
		}
		if expired(exp, s.opts.Now()) {
			// Already invisible: erase what was left, and say so. The
			// erasure is committed all the same.
			return errExpiredErased
		}
		return nil
	})
	if err == nil || errors.Is(err, errExpiredErased) {
		s.damage.forget(id)
	}
	if errors.Is(err, errExpiredErased) {
		return fmt.Errorf("delete %s: %w", id, cairn.ErrNotFound)
	}
	return s.fail("delete", id, err)
}

// errExpiredErased tells Delete's transaction to commit and report
// ErrNotFound.
var errExpiredErased = errors.New("expired session erased")

// erase deletes a session's row, events, texts, snapshot and labels inside
// tx. The row goes first: an event row deleted while its session's row is
// there marks the session damaged (migration 0006). The foreign keys
// (and, for the texts, a trigger on events: migration 0008) delete the
// rest with the row already; the statements after it say what goes.
func (s *Store) erase(ctx context.Context, tx *sql.Tx, id string) error {
	for _, q := range []string{
		`DELETE FROM sessions WHERE namespace = ? AND id = ?`,
		`DELETE FROM events WHERE namespace = ? AND session_id = ?`,
		`DELETE FROM search_texts WHERE namespace = ? AND session_id = ?`,
		`DELETE FROM snapshots WHERE namespace = ? AND session_id = ?`,
		`DELETE FROM session_labels WHERE namespace = ? AND session_id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, s.opts.Namespace, id); err != nil {
			return err
		}
	}
	return nil
}

// SweepBatch is the most expired sessions Sweep deletes in one
// transaction, while the writers of other sessions wait. Taking a
// session's words out of the search index (FTS5's secure-delete, a page
// rewritten for each word) makes a 4-event session cost milliseconds to
// delete, so Sweep sizes its batches to take about sweepBatchTime: a
// batch of 64 held writers for 130 to 330 ms at 100,000 sessions.
const SweepBatch = 64

// sweepBatchTime is how long Sweep aims to hold the write lock for one
// batch: it halves the next batch after a longer one and doubles it,
// up to SweepBatch, after one of less than a quarter of it.
const sweepBatchTime = 25 * time.Millisecond

// expiredSQL selects the IDs of a batch of the namespace's expired
// sessions, through sessions_by_expiry; ?1 namespace, ?2 now, ?3 the
// batch size.
const expiredSQL = `SELECT id FROM sessions WHERE namespace = ?1 AND expires_at > 0 AND expires_at <= ?2
	ORDER BY expires_at LIMIT ?3`

// Sweep implements driver.Sweeper: it deletes every session of the
// namespace that had expired when it started, with its events, texts,
// snapshots and labels, in batches sized to hold the write lock about
// 25 ms (at most SweepBatch sessions), and returns how many it deleted.
// Between batches other writers take their turn. When it deleted any, it
// gives the freed pages back to the file system (see incrementalVacuum).
// If it fails part way, it returns what it deleted so far with the error.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	now := unixnano.Of(s.opts.Now())
	total, batch := 0, SweepBatch/4
	for {
		var n int64
		began := time.Now()
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			// The batch's rows go first, as in erase: their events are
			// then deleted without marking the sessions damaged.
			ids, err := s.expiredBatch(ctx, tx, now, batch)
			if err != nil || len(ids) == 0 {
				return err
			}
			args := append([]any{s.opts.Namespace}, ids...)
			for i, q := range []string{
				`DELETE FROM sessions WHERE namespace = ? AND id IN `,
				`DELETE FROM events WHERE namespace = ? AND session_id IN `,
				`DELETE FROM search_texts WHERE namespace = ? AND session_id IN `,
				`DELETE FROM snapshots WHERE namespace = ? AND session_id IN `,
				`DELETE FROM session_labels WHERE namespace = ? AND session_id IN `,
			} {
				res, err := tx.ExecContext(ctx, q+in(len(ids)), args...)
				if err != nil {
					return err
				}
				if i == 0 {
					if n, err = res.RowsAffected(); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return total, s.fail("sweep", "", err)
		}
		total += int(n)
		if s.afterSweepBatch != nil {
			s.afterSweepBatch(int(n))
		}
		if n < int64(batch) {
			break
		}
		switch took := time.Since(began); {
		case took > sweepBatchTime:
			batch = max(1, batch/2)
		case took < sweepBatchTime/4:
			batch = min(SweepBatch, batch*2)
		}
		// A batch writes its pages to the WAL; left there, they make
		// some writer's commit run a long checkpoint of them. The
		// sweeper copies them into the database itself, on a reading
		// connection (a checkpoint takes no write lock), so that the
		// writers' commits meet a short WAL.
		if err := s.checkpoint(ctx); err != nil {
			return total, s.fail("sweep: checkpoint", "", err)
		}
	}
	if total > 0 {
		if err := s.incrementalVacuum(ctx); err != nil {
			return total, s.fail("sweep: give back free pages", "", err)
		}
	}
	return total, nil
}

// expiredBatch returns the IDs of a batch of the namespace's expired
// sessions (expiredSQL), as arguments.
func (s *Store) expiredBatch(ctx context.Context, tx *sql.Tx, now int64, limit int) ([]any, error) {
	rows, err := tx.QueryContext(ctx, expiredSQL, s.opts.Namespace, now, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []any
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// checkpoint copies the WAL's pages into the database file without
// waiting for, or blocking, any writer (PASSIVE), on a reading connection.
func (s *Store) checkpoint(ctx context.Context) error {
	var busy, frames, done int
	return s.r.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done)
}

// vacuumStep is how many free pages one incremental_vacuum step gives
// back: 1 MiB of the default 4 KiB pages, a few milliseconds of writing.
const vacuumStep = 256

// incrementalVacuum gives the database's free pages back to the file
// system, vacuumStep pages per transaction, so that other writers wait
// only for one step. It does nothing to a file whose auto_vacuum is not
// incremental (a file made before cairn set it, until a VACUUM; see the
// package documentation), where free pages stay in the file for reuse.
func (s *Store) incrementalVacuum(ctx context.Context) error {
	for last := int64(-1); ; {
		var mode, free int64
		if err := s.w.QueryRowContext(ctx, `SELECT auto_vacuum FROM pragma_auto_vacuum`).Scan(&mode); err != nil {
			return err
		}
		if err := s.w.QueryRowContext(ctx, `SELECT freelist_count FROM pragma_freelist_count`).Scan(&free); err != nil {
			return err
		}
		if mode != 2 || free == 0 || free == last {
			return nil // nothing (more) to give back
		}
		last = free
		if err := s.fileWritable(); err != nil {
			return err
		}
		rows, err := s.w.QueryContext(ctx, `PRAGMA incremental_vacuum(`+strconv.Itoa(vacuumStep)+`)`)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
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
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE namespace = ? AND expires_at > 0 AND expires_at <= ?`,
		s.opts.Namespace, unixnano.Of(s.opts.Now())).Scan(&n)
	if err != nil {
		return 0, s.fail("count expired", "", err)
	}
	return n, nil
}

// envelopes returns the events' envelopes as stored: each as
// driver.AppendEnvelope writes it, led by its checksum (see checksum.go).
// They are cut from one string, so that encoding an append allocates
// about twice, however many events it has.
func envelopes(events []cairn.Event) ([]string, error) {
	n := 0
	for _, e := range events {
		n += len(e.Data) + len(e.Kind) + len(e.Run) + 112 + envsum.Len
	}
	buf := make([]byte, 0, n)
	ends := make([]int, len(events))
	for i, e := range events {
		var err error
		if buf, err = envsum.Append(buf, e); err != nil {
			return nil, err
		}
		ends[i] = len(buf)
	}
	all := string(buf)
	bodies := make([]string, len(events))
	start := 0
	for i, end := range ends {
		bodies[i], start = all[start:end], end
	}
	return bodies, nil
}

func cloneLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}
