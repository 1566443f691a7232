package sqlite

import (
	"context"
	"database/sql"
)

// DeleteEvent deletes the event row of seq of session id on a connection
// of its own, as another program would (for storetest.Abilities.DeleteEvent).
func DeleteEvent(ctx context.Context, s *Store, id string, seq int64) error {
	db, err := sql.Open("sqlite", s.path)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `DELETE FROM events WHERE namespace = ? AND session_id = ? AND seq = ?`,
		s.opts.Namespace, id, seq)
	return err
}

// StoredEnvelopes returns the envelopes of session id as stored, without
// their checksums (for storetest.Abilities.Envelopes).
func StoredEnvelopes(ctx context.Context, s *Store, id string) ([][]byte, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT envelope FROM events WHERE namespace = ? AND session_id = ? ORDER BY seq`,
		s.opts.Namespace, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var envs [][]byte
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		if len(raw) >= sumLen {
			raw = append([]byte("{"), raw[sumLen:]...)
		}
		envs = append(envs, raw)
	}
	return envs, rows.Err()
}

// CheckTextIndex runs FTS5's integrity check of the long-term text index
// against the items' texts.
func CheckTextIndex(ctx context.Context, s *LongTerm) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO longterm_text (longterm_text, rank) VALUES ('integrity-check', 1)`)
	return err
}

// CheckSearchIndex runs FTS5's integrity check of the session search index
// against the texts it indexes.
func CheckSearchIndex(ctx context.Context, s *Store) error {
	if err := s.catchUp(ctx); err != nil {
		return err
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO search_index (search_index, rank) VALUES ('integrity-check', 1)`)
	return err
}
