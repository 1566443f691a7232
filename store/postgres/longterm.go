package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/ltrow"
	"github.com/cairnhq/cairn/internal/unixnano"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

func init() {
	ltdriver.RegisterByNamespace(func(ctx context.Context, dsn string, opts longterm.Options) (longterm.Store, error) {
		return OpenLongTerm(ctx, dsn, LongTermOptions{Options: opts})
	}, "postgres", "postgresql")
}

// LongTermOptions configure OpenLongTerm and NewLongTerm: Namespace is the
// session namespace whose schema holds the memory (cairn.DefaultNamespace
// when empty).
type LongTermOptions struct {
	longterm.Options
}

// LongTerm is a longterm.Store on PostgreSQL, in the longterm_items table
// of a session namespace's schema: the texts indexed in a tsvector column
// (GIN) and ranked with ts_rank, the vectors beside them as bytea,
// compared in Go over the filtered items. It is safe for concurrent use by
// many goroutines and processes.
type LongTerm struct {
	pool    *pgxpool.Pool
	ownPool bool
	opts    longterm.Options
	schema  string
	table   string // the items table, schema-qualified and quoted
	seq     string // the revision sequence, schema-qualified, as text for nextval
	guard   ltdriver.Guard
}

var (
	_ longterm.Store   = (*LongTerm)(nil)
	_ longterm.Sweeper = (*LongTerm)(nil)
)

// OpenLongTerm connects to the database a PostgreSQL URL or DSN names, as
// Open does, brings the namespace's schema up to date (the same
// migrations as the session store's: one schema holds both), and returns
// the long-term memory there, owning the pool: Close closes it.
func OpenLongTerm(ctx context.Context, dsn string, opts LongTermOptions) (*LongTerm, error) {
	pool, cfg, err := newPool(ctx, dsn)
	if err != nil {
		return nil, err
	}
	s, err := NewLongTerm(ctx, pool, opts)
	if err != nil {
		pool.Close()
		if errors.Is(err, cairn.ErrInvalidID) || errors.Is(err, cairn.ErrSchemaTooNew) {
			return nil, err
		}
		return nil, fmt.Errorf("open postgres memory store at %s: %w (is PostgreSQL running there, and do the URL's host, port, user and database match it?)", address(cfg), err)
	}
	s.ownPool = true
	return s, nil
}

// NewLongTerm returns the long-term memory on a pool the caller made and
// keeps: Close leaves the pool open.
func NewLongTerm(ctx context.Context, pool *pgxpool.Pool, opts LongTermOptions) (*LongTerm, error) {
	if pool == nil {
		return nil, errors.New("new postgres memory store: the pool is nil")
	}
	ns, err := ltdriver.SessionNamespace(opts.Options)
	if err != nil {
		return nil, err
	}
	schema := Schema(ns)
	if err := migrate(ctx, pool, schema); err != nil {
		return nil, translate(err)
	}
	return &LongTerm{
		pool:   pool,
		opts:   opts.Options.WithDefaults(),
		schema: schema,
		table:  pgx.Identifier{schema, "longterm_items"}.Sanitize(),
		seq:    pgx.Identifier{schema, "longterm_revision"}.Sanitize(),
	}, nil
}

// Schema returns the name of the schema that holds the items.
func (s *LongTerm) Schema() string { return s.schema }

// Pool returns the connection pool the store uses.
func (s *LongTerm) Pool() *pgxpool.Pool { return s.pool }

// Close implements longterm.Store. It closes the pool if OpenLongTerm
// made it.
func (s *LongTerm) Close() error {
	if !s.guard.Close() {
		return nil
	}
	if s.ownPool {
		s.pool.Close()
	}
	return nil
}

// fail wraps err for the operation op.
func (s *LongTerm) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, longterm.ErrNotFound) || errors.Is(err, longterm.ErrConflict) {
		return err
	}
	if s.guard.Closed() {
		err = cairn.ErrClosed
	}
	return fmt.Errorf("%s: %w", op, translate(err))
}

// errRaced is an insert that met a row another writer inserted since the
// transaction read none: the Put starts again.
var errRaced = errors.New("raced")

// Put implements longterm.Store: one transaction locks the item's row
// (SELECT … FOR UPDATE), then writes the row, its tsvector with it, and
// its version, the sequence's next value.
func (s *LongTerm) Put(ctx context.Context, item longterm.Item, opts longterm.PutOptions) (*longterm.Item, error) {
	item, err := s.guard.Put(ctx, s.opts, item, opts)
	if err != nil {
		return nil, err
	}
	labels, err := ltrow.Labels(item.Labels)
	if err != nil {
		return nil, err
	}
	tsv := TSVector(item.Text)
	now := ltdriver.Now(s.opts)
	path := longterm.PathOrder(item.Namespace)
	for {
		stamped := item
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var id, version, created, exp int64
			err := tx.QueryRow(ctx, `SELECT id, version, created_at, expires_at FROM `+s.table+`
				WHERE path = $1 AND key = $2 FOR UPDATE`, path, item.Key).Scan(&id, &version, &created, &exp)
			exists := err == nil
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			var old *longterm.Item
			var current int64
			if exists && !ltdriver.Expired(unixnano.Time(exp), now) {
				old, current = &longterm.Item{CreatedAt: unixnano.Time(created)}, version
			}
			if err := ltdriver.Admit(item.Namespace, item.Key, current, opts.IfVersion); err != nil {
				return err
			}
			// The version is the sequence's next value, taken by the
			// write itself (one round trip fewer).
			ltdriver.Stamp(&stamped, old, 0, now, opts.TTL)
			args := []any{stamped.Value, []byte(stamped.Text), tsv, labels, ltdriver.EncodeVector(stamped.Vector), stamped.VectorModel,
				stamped.Source.Session, stamped.Source.Seq, s.seq, unixnano.Of(stamped.CreatedAt), unixnano.Of(stamped.UpdatedAt), unixnano.Of(stamped.ExpiresAt)}
			if exists {
				return tx.QueryRow(ctx, `UPDATE `+s.table+` SET value = $1, text = $2, tsv = $3::tsvector, labels = $4::jsonb,
					vector = $5, vector_model = $6, source_session = $7, source_seq = $8, version = nextval($9::regclass),
					created_at = $10, updated_at = $11, expires_at = $12 WHERE id = $13 RETURNING version`, append(args, id)...).Scan(&stamped.Version)
			}
			err = tx.QueryRow(ctx, `INSERT INTO `+s.table+` (value, text, tsv, labels, vector, vector_model,
				source_session, source_seq, version, created_at, updated_at, expires_at, namespace, path, key)
				VALUES ($1, $2, $3::tsvector, $4::jsonb, $5, $6, $7, $8, nextval($9::regclass), $10, $11, $12, $13, $14, $15)
				ON CONFLICT (path, key) DO NOTHING RETURNING version`, append(args, item.Namespace, path, item.Key)...).Scan(&stamped.Version)
			if errors.Is(err, pgx.ErrNoRows) {
				return errRaced
			}
			return err
		})
		if errors.Is(err, errRaced) {
			continue
		}
		if err != nil {
			return nil, s.fail("put "+item.Namespace+" "+item.Key, err)
		}
		return &stamped, nil
	}
}

// PostgreSQL's limits on a tsvector: the longest lexeme, the highest
// position, the most positions a lexeme keeps, and the most bytes its
// lexemes and positions take.
const (
	maxLexeme    = 2046
	maxPosition  = 16383
	maxPositions = 256
	maxTSVector  = 1<<20 - 1
)

// TSVector returns the tsvector the store indexes for a text, in
// PostgreSQL's input form: each of the text's tokens (longterm.Tokens,
// the split of every backend, not a text search configuration's) with
// its positions, quoted. A token holds letters and digits only, so
// nothing in it is tsvector syntax. PostgreSQL's limits apply: a token
// longer than 2,046 bytes is left out (no search finds it), positions
// past 16,383 count as 16,383 and a token keeps its first 256 positions,
// so phrases are matched in the first 16,383 tokens of a text; and the
// tokens first met after the vector's first megabyte (a text of some
// 500 KB of distinct words) are left out.
func TSVector(text string) string { return tsvector(longterm.Tokens(text)) }

// tsvector is TSVector of a text split into toks. Each distinct token
// gets a slot, in the order first met, and its positions go into one
// array, each slot's together (a counting sort), rather than a slice of
// its own.
func tsvector(toks []string) string {
	slots := make(map[string]int32, min(len(toks), 64))
	var (
		order []string // the distinct tokens, by slot
		slot  = make([]int32, len(toks))
		count []int32 // positions kept by slot
	)
	for i, t := range toks {
		if len(t) > maxLexeme {
			slot[i] = -1
			continue
		}
		k, seen := slots[t]
		if !seen {
			k = int32(len(order))
			slots[t] = k
			order, count = append(order, t), append(count, 0)
		}
		slot[i] = k
		count[k]++
	}
	// Each slot's positions from start[k] on, at most maxPositions, and
	// past maxPosition only once.
	start := make([]int32, len(order)+1)
	for k, n := range count {
		start[k+1] = start[k] + min(n, maxPositions)
		count[k] = 0
	}
	pos := make([]int32, start[len(order)])
	for i, k := range slot {
		if k < 0 {
			continue
		}
		at := int32(min(i+1, maxPosition))
		if n := count[k]; int(n) < maxPositions && (n == 0 || pos[start[k]+n-1] != at) {
			pos[start[k]+n] = at
			count[k]++
		}
	}
	var (
		b       strings.Builder
		scratch [12]byte
	)
	b.Grow(len(toks) * 8)
	size := 0
	for k, t := range order {
		p := pos[start[k] : start[k]+count[k]]
		// As PostgreSQL counts: the lexeme, padded to an even length,
		// and its positions with their count, 2 bytes each.
		if size += (len(t)+1)&^1 + 2 + 2*len(p); size > maxTSVector {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('\'')
		b.WriteString(t)
		b.WriteString("':")
		for j, at := range p {
			if j > 0 {
				b.WriteByte(',')
			}
			b.Write(strconv.AppendInt(scratch[:0], int64(at), 10))
		}
	}
	return b.String()
}

// TSQuery returns the tsquery of a search's phrases, in PostgreSQL's
// input form: each phrase its tokens joined by <-> (one after the other),
// the phrases joined by |. "" when no phrase can match.
func TSQuery(phrases [][]string) string {
	var parts []string
	for _, p := range phrases {
		ok := true
		q := make([]string, len(p))
		for i, t := range p {
			if len(t) > maxLexeme {
				ok = false
			}
			q[i] = "'" + t + "'"
		}
		if ok {
			parts = append(parts, "("+strings.Join(q, " <-> ")+")")
		}
	}
	return strings.Join(parts, " | ")
}

// Delete implements longterm.Store.
func (s *LongTerm) Delete(ctx context.Context, namespace, key string, ifVersion int64) error {
	if err := s.guard.Delete(namespace, key, ifVersion); err != nil {
		return err
	}
	now := ltdriver.Now(s.opts)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id, version, exp int64
		err := tx.QueryRow(ctx, `SELECT id, version, expires_at FROM `+s.table+` WHERE path = $1 AND key = $2 FOR UPDATE`,
			longterm.PathOrder(namespace), key).Scan(&id, &version, &exp)
		if errors.Is(err, pgx.ErrNoRows) {
			return ltdriver.NotFound(namespace, key)
		}
		if err != nil {
			return err
		}
		if ltdriver.Expired(unixnano.Time(exp), now) {
			// Already invisible: erase what was left, and say so.
			if _, err := tx.Exec(ctx, `DELETE FROM `+s.table+` WHERE id = $1`, id); err != nil {
				return err
			}
			return errExpiredErased
		}
		if err := ltdriver.Admit(namespace, key, version, ifVersion); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM `+s.table+` WHERE id = $1`, id)
		return err
	})
	if errors.Is(err, errExpiredErased) {
		return ltdriver.NotFound(namespace, key)
	}
	return s.fail("delete "+namespace+" "+key, err)
}

// errExpiredErased commits the erasure of an expired item that Delete
// then reports as not found.
var errExpiredErased = errors.New("expired item erased")

// DeleteNamespace implements longterm.Store: one statement deletes the
// rows of one range of the path index; their tsvectors and vectors go
// with them.
func (s *LongTerm) DeleteNamespace(ctx context.Context, prefix string) (int, error) {
	if err := s.guard.DeleteNamespace(prefix); err != nil {
		return 0, err
	}
	lo, hi := longterm.PrefixRange(prefix)
	var n int
	err := s.pool.QueryRow(ctx, `WITH gone AS (DELETE FROM `+s.table+` WHERE path >= $1 AND path < $2 RETURNING expires_at)
		SELECT count(*) FILTER (WHERE expires_at = 0 OR expires_at > $3) FROM gone`,
		lo, hi, unixnano.Of(ltdriver.Now(s.opts))).Scan(&n)
	if err != nil {
		return 0, s.fail("delete namespace "+prefix, err)
	}
	return n, nil
}

// Sweep implements longterm.Sweeper: one statement through the expiry
// index.
func (s *LongTerm) Sweep(ctx context.Context) (int, error) {
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM `+s.table+` WHERE expires_at > 0 AND expires_at <= $1`, unixnano.Of(ltdriver.Now(s.opts)))
	if err != nil {
		return 0, s.fail("sweep", err)
	}
	return int(tag.RowsAffected()), nil
}
