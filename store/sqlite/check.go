package sqlite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

var _ driver.Checker = (*Store)(nil)

// Check implements driver.Checker. It runs PRAGMA quick_check over the
// whole file (every page of every table and index, in one read), then
// loads every session of the namespace as Load does: each event against
// its checksum, the seqs against the session's last seq. It writes
// nothing. A damaged session is a Problem naming it; a damaged file, one
// naming the file.
func (s *Store) Check(ctx context.Context) (*driver.CheckReport, error) {
	if err := s.guard.Check(); err != nil {
		return nil, err
	}
	rep := &driver.CheckReport{Problems: []driver.Problem{}}
	fileBad, err := s.quickCheck(ctx)
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", s.path, s.classify(err))
	}
	ids, err := s.sessionIDs(ctx)
	if err != nil && !corrupt(err) {
		return nil, fmt.Errorf("check %s: %w", s.path, s.classify(err))
	}
	if err != nil && fileBad == "" {
		fileBad = describe(err)
	}
	fix := "delete the session (cairn sessions delete ID) or restore the database file from a backup; the other sessions are not affected"
	if fileBad != "" {
		fix = "copy the sessions that still load to a new file, then replace this one (see the file-level problem)"
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rep.Sessions++
		_, err := s.load(ctx, id, 1)
		var d *driver.DamagedError
		switch {
		case err == nil, errors.Is(err, cairn.ErrNotFound):
			continue
		case errors.As(err, &d):
		case corrupt(err):
			d = &driver.DamagedError{Session: id, Where: s.path, Msg: describe(err)}
			s.damage.note(d)
		default:
			return nil, fmt.Errorf("check %s: session %s: %w", s.path, id, s.classify(err))
		}
		rep.Problems = append(rep.Problems, driver.Problem{Session: id, Where: d.Where, Msg: d.Msg, Fix: fix, Damage: true})
	}
	if fileBad != "" {
		rep.Problems = append(rep.Problems, driver.Problem{Where: s.path, Damage: true,
			Msg: "the database file is damaged: " + fileBad,
			Fix: "this store writes nothing more to it; copy the sessions that still load to a new file " +
				"(cairn sessions copy --from sqlite:///OLD --to sqlite:///NEW), or rebuild it with the sqlite3 shell's .recover; " +
				"keep the damaged file until the copy is checked"})
		s.damage.setFile(errors.New("PRAGMA quick_check: " + fileBad))
	}
	return rep, nil
}

// quickCheck runs PRAGMA quick_check and returns what it found wrong, ""
// when the file is sound. SQLite's refusal to read the file at all is a
// finding too.
func (s *Store) quickCheck(ctx context.Context) (string, error) {
	rows, err := s.r.QueryContext(ctx, "PRAGMA quick_check(20)")
	if err != nil {
		if corrupt(err) {
			return describe(err), nil
		}
		return "", err
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		if line != "ok" {
			found = append(found, line)
		}
	}
	if err := rows.Err(); err != nil {
		if corrupt(err) {
			return describe(err), nil
		}
		return "", err
	}
	return strings.Join(found, "; "), nil
}

// sessionIDs returns the IDs of the namespace's live sessions. When the
// sessions table cannot be read through (a damaged page), it returns what
// it read with the error, and the IDs that the List index and the events
// table still name, so that Check can name the sessions one by one.
func (s *Store) sessionIDs(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	err := s.scanIDs(ctx, seen, `SELECT id, expires_at FROM sessions WHERE namespace = ?`, true)
	if err != nil && corrupt(err) {
		for _, q := range []string{
			`SELECT id FROM sessions INDEXED BY sessions_by_update WHERE namespace = ?`,
			`SELECT DISTINCT session_id FROM events WHERE namespace = ?`,
		} {
			_ = s.scanIDs(ctx, seen, q, false) // as far as it reads
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, err
}

// scanIDs adds the IDs query returns to seen, leaving out expired ones
// when the query returns expires_at too.
func (s *Store) scanIDs(ctx context.Context, seen map[string]bool, query string, withExpiry bool) error {
	rows, err := s.r.QueryContext(ctx, query, s.opts.Namespace)
	if err != nil {
		return err
	}
	defer rows.Close()
	now := s.opts.Now()
	for rows.Next() {
		var (
			id  string
			exp int64
		)
		dest := []any{&id}
		if withExpiry {
			dest = append(dest, &exp)
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if !expired(exp, now) {
			seen[id] = true
		}
	}
	return rows.Err()
}
