package cairn

import "context"

// Checker is an optional Store ability: look through the stored data for
// damage, as far as the backend can tell cheaply, without changing
// anything. The file store reads every session's log against its info and
// its checksums; SQLite runs PRAGMA quick_check and reads every event
// against its checksum. `cairn doctor` runs it.
//
// Fallback: a store without Checker is checked only by its ordinary calls,
// which return an error wrapping ErrDamaged when they meet damage (see
// ErrDamaged); servers such as PostgreSQL have checks of their own.
type Checker interface {
	// Check reads the namespace's data and reports what is damaged or
	// left over. It writes nothing and repairs nothing, and may take as
	// long as reading everything once. Damage is a finding, not an
	// error: the error is for a check that could not run (the store is
	// unreachable, ctx ended).
	Check(ctx context.Context) (*CheckReport, error)
}

// CheckReport is what Checker.Check found.
type CheckReport struct {
	Sessions int       `json:"sessions"` // sessions checked
	Problems []Problem `json:"problems"` // what is wrong, the damaged sessions first, by ID
}

// Damaged returns the problems that are damaged sessions.
func (r *CheckReport) Damaged() []Problem {
	var out []Problem
	for _, p := range r.Problems {
		if p.Session != "" {
			out = append(out, p)
		}
	}
	return out
}

// Problem is one thing Check found wrong.
type Problem struct {
	// Session is the damaged session, or "" for a problem that is not
	// one session's: a damaged database file, a leftover file.
	Session string `json:"session,omitempty"`
	// Where is the file, table or key at fault.
	Where string `json:"where"`
	// Msg says what is wrong, in words.
	Msg string `json:"msg"`
	// Fix says what to do about it, in words; "" when there is nothing
	// better to say than to restore from a backup.
	Fix string `json:"fix,omitempty"`
	// Damage is true for damaged data (for a session, what its calls
	// return as ErrDamaged) and false for a leftover that loses nothing,
	// such as a lock file of a deleted session.
	Damage bool `json:"damage"`
}
