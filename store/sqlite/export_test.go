package sqlite

import "context"

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
