package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/ltrow"
	"github.com/cairnhq/cairn/internal/unixnano"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

func init() {
	ltdriver.RegisterByNamespace(func(ctx context.Context, rawURL string, opts longterm.Options) (longterm.Store, error) {
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, err
		}
		path, o, err := parseURL(u)
		if err != nil {
			return nil, err
		}
		return OpenLongTerm(ctx, path, LongTermOptions{Options: opts, Synchronous: o.Synchronous})
	}, "sqlite")
}

// LongTermOptions configure OpenLongTerm.
type LongTermOptions struct {
	longterm.Options
	// Synchronous is as Options.Synchronous: "FULL" (the default) or
	// "NORMAL".
	Synchronous string
}

// LongTerm is a longterm.Store in a SQLite database file: the file of a
// session Store, or one of its own. Items live in the longterm_items
// table, their texts in the FTS5 index longterm_text (searched with BM25),
// their vectors beside them as BLOBs (compared in Go). Like a Store, it
// writes through one connection of its own and reads through a small pool;
// it is safe for concurrent use, and several processes may open the file.
type LongTerm struct {
	opts  longterm.Options
	path  string
	sync  string
	scope string // the stored prefix of the session namespace's items (scopeOf)
	w, r  *sql.DB

	counts    indexCounts // the items under the prefixes and holding the phrases searched
	stmts     searchStmts
	guard     ltdriver.Guard
	closeOnce sync.Once
	closeErr  error
}

var (
	_ longterm.Store   = (*LongTerm)(nil)
	_ longterm.Sweeper = (*LongTerm)(nil)
)

// OpenLongTerm opens the long-term memory of session namespace
// opts.Namespace in the SQLite database at path, creating the file and
// bringing its schema up to date as Open does (the same migrations: a
// file holds sessions and long-term memory together).
func OpenLongTerm(ctx context.Context, path string, opts LongTermOptions) (*LongTerm, error) {
	syncMode, err := synchronousMode(opts.Synchronous)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	scope, err := scopeOf(opts.Options)
	if err != nil {
		return nil, err
	}
	abs, empty, err := openFile(path)
	if err != nil {
		return nil, err
	}
	s := &LongTerm{opts: opts.Options.WithDefaults(), path: abs, sync: syncMode, scope: scope}
	// The readers run without cell_size_check: SQLite drops a reader's
	// pages whenever another connection has written, so a search after a
	// write reads every page again, and checking each one was over a
	// third of a search of 100,000 items (docs/PERFORMANCE.md). The
	// writer checks the pages it reads, so that nothing is written on top
	// of a damaged one; a reader still refuses a cell whose content runs
	// past its page when it reads it.
	if err := openConns(ctx, abs, syncMode, empty, false, &s.w, &s.r); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("open sqlite %s: %w", path, classifyAt(abs, err))
	}
	if err := s.stmts.prepare(ctx, s.r); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("open sqlite %s: %w", path, classifyAt(abs, err))
	}
	return s, nil
}

// Path returns the absolute path of the database file.
func (s *LongTerm) Path() string { return s.path }

// Close implements longterm.Store.
func (s *LongTerm) Close() error {
	s.closeOnce.Do(func() {
		s.guard.Close()
		s.closeErr = s.closeDBs()
	})
	return s.closeErr
}

func (s *LongTerm) closeDBs() error {
	return errors.Join(s.stmts.close(), closeConns(s.path, nil, s.r, s.w))
}

// fail wraps err for the operation op, translating SQLite's errors (see
// Store.classify).
func (s *LongTerm) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	if s.guard.Closed() && !errors.Is(err, longterm.ErrNotFound) && !errors.Is(err, longterm.ErrConflict) {
		err = cairn.ErrClosed
	}
	return fmt.Errorf("%s: %w", op, classifyAt(s.path, err))
}

// writeTx runs fn in an immediate transaction on the writer connection and
// commits it if fn returns nil.
func (s *LongTerm) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Put implements longterm.Store: one immediate transaction reads the
// item's row, takes the next version, writes the row, its text index
// entry and its size (longterm_sizes).
func (s *LongTerm) Put(ctx context.Context, item longterm.Item, opts longterm.PutOptions) (*longterm.Item, error) {
	item, err := s.guard.Put(ctx, s.opts, item, opts)
	if err != nil {
		return nil, err
	}
	labels, err := ltrow.Labels(item.Labels)
	if err != nil {
		return nil, err
	}
	now := ltdriver.Now(s.opts)
	var rev int64
	var exists bool
	var oldText string
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		var id, version, created, exp int64
		var oldNS string
		err := tx.QueryRowContext(ctx, `SELECT id, version, created_at, expires_at, text, ns_index FROM longterm_items
			WHERE path = ? AND key = ?`, longterm.PathOrder(s.stored(item.Namespace)), item.Key).Scan(&id, &version, &created, &exp, &oldText, &oldNS)
		exists = err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var old *longterm.Item
		var current int64
		if exists && !expired(exp, now) {
			old, current = &longterm.Item{CreatedAt: unixnano.Time(created)}, version
		}
		if err := ltdriver.Admit(item.Namespace, item.Key, current, opts.IfVersion); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `UPDATE longterm_revision SET revision = revision + 1 WHERE id = 1
			RETURNING revision`).Scan(&rev); err != nil {
			return err
		}
		ltdriver.Stamp(&item, old, rev, now, opts.TTL)
		nsIndex := nsTokens(s.stored(item.Namespace))
		args := []any{item.Value, item.Text, labels, ltdriver.EncodeVector(item.Vector), item.VectorModel,
			item.Source.Session, item.Source.Seq, item.Version, unixnano.Of(item.CreatedAt), unixnano.Of(item.UpdatedAt), unixnano.Of(item.ExpiresAt), nsIndex}
		if exists {
			if _, err := tx.ExecContext(ctx, `UPDATE longterm_items SET value = ?, text = ?, labels = ?, vector = ?,
				vector_model = ?, source_session = ?, source_seq = ?, version = ?, created_at = ?, updated_at = ?,
				expires_at = ?, ns_index = ? WHERE id = ?`, append(args, id)...); err != nil {
				return err
			}
			if err := unindex(ctx, tx, erased{id, oldText, oldNS}); err != nil {
				return err
			}
		} else {
			if err := tx.QueryRowContext(ctx, `INSERT INTO longterm_items (value, text, labels, vector, vector_model,
				source_session, source_seq, version, created_at, updated_at, expires_at, ns_index, namespace, key)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
				append(args, s.stored(item.Namespace), item.Key)...).Scan(&id); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO longterm_text (rowid, text, ns_index) VALUES (?, ?, ?)`, id, item.Text, nsIndex); err != nil {
			return err
		}
		return setSize(ctx, tx, id)
	})
	if err != nil {
		return nil, s.fail("put "+item.Namespace+" "+item.Key, err)
	}
	s.counts.put(rev, longterm.PathOrder(s.stored(item.Namespace)), exists, oldText, item.Text)
	return &item, nil
}

// Delete implements longterm.Store.
func (s *LongTerm) Delete(ctx context.Context, namespace, key string, ifVersion int64) error {
	if err := s.guard.Delete(namespace, key, ifVersion); err != nil {
		return err
	}
	now := ltdriver.Now(s.opts)
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var version, exp int64
		var e erased
		err := tx.QueryRowContext(ctx, `SELECT id, version, expires_at, text, ns_index FROM longterm_items WHERE path = ? AND key = ?`,
			longterm.PathOrder(s.stored(namespace)), key).Scan(&e.id, &version, &exp, &e.text, &e.ns)
		if errors.Is(err, sql.ErrNoRows) {
			return ltdriver.NotFound(namespace, key)
		}
		if err != nil {
			return err
		}
		if expired(exp, now) {
			// Already invisible: erase what was left, and say so.
			if err := eraseItem(ctx, tx, e); err != nil {
				return err
			}
			return errExpiredErased
		}
		if err := ltdriver.Admit(namespace, key, version, ifVersion); err != nil {
			return err
		}
		return eraseItem(ctx, tx, e)
	})
	if errors.Is(err, errExpiredErased) {
		return ltdriver.NotFound(namespace, key)
	}
	return s.fail("delete "+namespace+" "+key, err)
}

// eraseItem deletes an item's row, its text index entry and its size
// inside tx.
func eraseItem(ctx context.Context, tx *sql.Tx, e erased) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM longterm_items WHERE id = ?`, e.id); err != nil {
		return err
	}
	return unindexAll(ctx, tx, []erased{e})
}

// unindex deletes an item's entry from the text index: the index's
// content is the items table's, so it is told the values whose tokens to
// take out. Every item has an entry, a text without a token too, as the
// index must hold a row for every row of its content.
func unindex(ctx context.Context, tx *sql.Tx, e erased) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO longterm_text (longterm_text, rowid, text, ns_index) VALUES ('delete', ?, ?, ?)`,
		e.id, e.text, e.ns)
	return err
}

// nsTokens returns what the ns_index column holds for namespace ns: a
// token for ns and for each prefix of it (nsToken).
func nsTokens(ns string) string {
	var toks []string
	for i := 0; i <= len(ns); i++ {
		if i == len(ns) || ns[i] == '/' {
			toks = append(toks, nsToken(ns[:i]))
		}
	}
	return strings.Join(toks, " ")
}

// nsToken names a namespace in the text index: "p" and 16 hex digits of
// a SHA-256 of it, a token of letters and digits as FTS5 reads them.
func nsToken(ns string) string {
	sum := sha256.Sum256([]byte("cairn longterm namespace\x00" + ns))
	return "p" + hex.EncodeToString(sum[:8])
}

// DeleteNamespace implements longterm.Store, in one transaction: the rows
// of the namespaces under prefix (one range of the path index) and their
// text index entries.
func (s *LongTerm) DeleteNamespace(ctx context.Context, prefix string) (int, error) {
	if err := s.guard.DeleteNamespace(prefix); err != nil {
		return 0, err
	}
	lo, hi := longterm.PrefixRange(s.stored(prefix))
	now := unixnano.Of(ltdriver.Now(s.opts))
	n := 0
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		n = 0
		rows, err := tx.QueryContext(ctx, `DELETE FROM longterm_items WHERE path >= ? AND path < ?
			RETURNING id, expires_at, text, ns_index`, lo, hi)
		if err != nil {
			return err
		}
		var gone []erased
		for rows.Next() {
			var e erased
			var exp int64
			if err := rows.Scan(&e.id, &exp, &e.text, &e.ns); err != nil {
				rows.Close()
				return err
			}
			gone = append(gone, e)
			if exp == 0 || exp > now {
				n++
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		return unindexAll(ctx, tx, gone)
	})
	if err != nil {
		return 0, s.fail("delete namespace "+prefix, err)
	}
	return n, nil
}

// erased is an item whose row was deleted: its rowid and the values the
// text index holds of it.
type erased struct {
	id   int64
	text string
	ns   string // ns_index
}

// unindexAll deletes the text index entries and the sizes of erased
// items.
func unindexAll(ctx context.Context, tx *sql.Tx, gone []erased) error {
	ids := make([]int64, len(gone))
	for i, e := range gone {
		if err := unindex(ctx, tx, e); err != nil {
			return err
		}
		ids[i] = e.id
	}
	return clearSizes(ctx, tx, ids)
}

// Sweep implements longterm.Sweeper: it erases the expired items,
// SweepBatch per transaction, through the expiry index.
func (s *LongTerm) Sweep(ctx context.Context) (int, error) {
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	now := unixnano.Of(ltdriver.Now(s.opts))
	total := 0
	for {
		var gone []erased
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			gone = gone[:0]
			rows, err := tx.QueryContext(ctx, `DELETE FROM longterm_items WHERE id IN (SELECT id FROM longterm_items
				WHERE expires_at > 0 AND expires_at <= ? ORDER BY expires_at LIMIT ?) RETURNING id, text, ns_index`, now, SweepBatch)
			if err != nil {
				return err
			}
			for rows.Next() {
				var e erased
				if err := rows.Scan(&e.id, &e.text, &e.ns); err != nil {
					rows.Close()
					return err
				}
				gone = append(gone, e)
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return err
			}
			return unindexAll(ctx, tx, gone)
		})
		if err != nil {
			return total, s.fail("sweep", err)
		}
		total += len(gone)
		if len(gone) < SweepBatch {
			return total, nil
		}
	}
}
