package sqlite

import (
	"context"
	"database/sql"
	"errors"
)

// The statements that every search runs with no SQL of its own.
const (
	// stateSQL reads the index's state (readState).
	stateSQL = `SELECT (SELECT revision FROM longterm_revision WHERE id = 1),
		(SELECT block FROM longterm_text_data WHERE id = 1)`
	// matchSQL reads the rowids of up to ?2 matches of ?1 (matchIDs).
	matchSQL = `SELECT rowid FROM longterm_text WHERE longterm_text MATCH ? LIMIT ?`
	// vocabSQL reads the items that hold a token (phraseItems).
	vocabSQL = `SELECT doc FROM longterm_vocab_col WHERE term = ? AND col = 'text'`
)

// searchStmts are the statements of stateSQL, matchSQL and vocabSQL,
// prepared on the readers: database/sql prepares each once on each
// connection that runs it, where a query of SQL prepares it at every
// call: 6–9% of a search of one namespace (docs/PERFORMANCE.md).
type searchStmts struct{ state, match, vocab *sql.Stmt }

func (p *searchStmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, s := range []struct {
		st  **sql.Stmt
		sql string
	}{{&p.state, stateSQL}, {&p.match, matchSQL}, {&p.vocab, vocabSQL}} {
		st, err := db.PrepareContext(ctx, s.sql)
		if err != nil {
			return err
		}
		*s.st = st
	}
	return nil
}

func (p *searchStmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{p.state, p.match, p.vocab} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}
