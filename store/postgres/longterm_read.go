package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/internal/ltrow"
	"github.com/cairnhq/cairn/internal/unixnano"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// ltColumns are the columns scanLT reads, with the vector's place given:
// "i.vector", or "NULL" when the reader does not want it.
func ltColumns(vector string) string {
	return `i.namespace, i.key, i.value, i.text, i.labels::text, ` + vector + `, i.vector_model,
		i.source_session, i.source_seq, i.version, i.created_at, i.updated_at, i.expires_at`
}

// scanLT reads an item's columns (ltColumns), after extra columns.
func scanLT(row ltrow.Scanner, extra ...any) (longterm.Item, error) {
	var r ltrow.Row
	var text []byte
	if err := row.Scan(r.Dest(&text, extra...)...); err != nil {
		return longterm.Item{}, err
	}
	return r.Item(string(text))
}

// ltFilter is a WHERE clause on the items (alias i) and its arguments,
// numbered from $1.
type ltFilter struct {
	where []string
	args  []any
}

// add adds a condition whose parameters are written "$?", numbered in
// order.
func (f *ltFilter) add(cond string, args ...any) {
	for range args {
		f.args = append(f.args, nil)
		cond = strings.Replace(cond, "$?", "$"+strconv.Itoa(len(f.args)), 1)
	}
	copy(f.args[len(f.args)-len(args):], args)
	f.where = append(f.where, cond)
}

// next is the placeholder of the next argument.
func (f *ltFilter) next() string { return "$" + strconv.Itoa(len(f.args)+1) }

func (f *ltFilter) sql() string {
	if len(f.where) == 0 {
		return "true"
	}
	return strings.Join(f.where, " AND ")
}

// itemFilter selects the live items under prefix with labels.
func (s *LongTerm) itemFilter(prefix string, labels map[string]string) *ltFilter {
	f := &ltFilter{}
	f.add(`(i.expires_at = 0 OR i.expires_at > $?)`, unixnano.Of(ltdriver.Now(s.opts)))
	if prefix != "" {
		lo, hi := longterm.PrefixRange(prefix)
		f.add(`i.path >= $? AND i.path < $?`, lo, hi)
	}
	if len(labels) > 0 {
		b, _ := json.Marshal(labels)
		f.add(`i.labels @> $?::jsonb`, string(b))
	}
	return f
}

// Get implements longterm.Store.
func (s *LongTerm) Get(ctx context.Context, namespace, key string) (*longterm.Item, error) {
	if err := s.guard.Key(namespace, key); err != nil {
		return nil, err
	}
	it, err := scanLT(s.pool.QueryRow(ctx, `SELECT `+ltColumns("i.vector")+` FROM `+s.table+` AS i
		WHERE i.path = $1 AND i.key = $2 AND (i.expires_at = 0 OR i.expires_at > $3)`,
		longterm.PathOrder(namespace), key, unixnano.Of(ltdriver.Now(s.opts))))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ltdriver.NotFound(namespace, key)
	}
	if err != nil {
		return nil, s.fail("get "+namespace+" "+key, err)
	}
	return &it, nil
}

// List implements longterm.Store: one range of the (path, key) index,
// from the cursor on.
func (s *LongTerm) List(ctx context.Context, opts longterm.ListOptions) (*longterm.ListPage, error) {
	opts, cur, err := s.guard.List(opts)
	if err != nil {
		return nil, err
	}
	f := s.itemFilter(opts.Prefix, opts.Labels)
	if !cur.IsZero() {
		f.add(`(i.path, i.key) > ($?, $?)`, longterm.PathOrder(cur.Namespace), cur.Key)
	}
	vector := "NULL::bytea"
	if opts.Vectors {
		vector = "i.vector"
	}
	limit := f.next()
	rows, err := s.pool.Query(ctx, `SELECT `+ltColumns(vector)+` FROM `+s.table+` AS i
		WHERE `+f.sql()+` ORDER BY i.path, i.key LIMIT `+limit, unprepared(append(f.args, opts.Limit+1))...)
	if err != nil {
		return nil, s.fail("list", err)
	}
	defer rows.Close()
	items, err := ltrow.Items(rows, scanLT)
	if err != nil {
		return nil, s.fail("list", err)
	}
	return ltdriver.Page(items, opts.Limit), nil
}

// Namespaces implements longterm.Store by skipping through the path
// index: one seek per namespace listed, and, with a depth, one per
// namespace cut (a cut's subtree is skipped at once).
func (s *LongTerm) Namespaces(ctx context.Context, opts longterm.NamespaceOptions) (*longterm.NamespacePage, error) {
	opts, err := s.guard.Namespaces(opts)
	if err != nil {
		return nil, err
	}
	now := unixnano.Of(ltdriver.Now(s.opts))
	page, err := ltrow.SkipNamespaces(opts, pgx.ErrNoRows, func(op, pos, hi string) (ns string, err error) {
		err = s.pool.QueryRow(ctx, `SELECT i.namespace FROM `+s.table+` AS i
			WHERE i.path `+op+` $1 AND i.path < $2 AND (i.expires_at = 0 OR i.expires_at > $3)
			ORDER BY i.path LIMIT 1`, pos, hi, now).Scan(&ns)
		return ns, err
	})
	return page, s.fail("namespaces", err)
}

// Search implements longterm.Store. The text side is one query: the GIN
// index finds the items whose tsvector matches the phrases (tsv @@ the
// tsquery), the filters cut them, ts_rank ranks them. The vector side
// reads the vectors of the filtered items of the search's model and length
// and computes cosine in Go. Both run in one repeatable-read transaction,
// so that they see the same items.
func (s *LongTerm) Search(ctx context.Context, opts longterm.SearchOptions) ([]longterm.Result, error) {
	q, err := s.guard.Search(ctx, s.opts, opts)
	if err != nil {
		return nil, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, s.fail("search", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	ranked, err := ltdriver.Find(ctx, q, func(ctx context.Context, q ltdriver.Search) ([]ltdriver.Hit, error) {
		return s.textHits(ctx, tx, q)
	}, func(ctx context.Context, q ltdriver.Search) ([]ltdriver.Hit, error) {
		return s.vectorHits(ctx, tx, q)
	})
	if err != nil {
		return nil, s.fail("search", err)
	}
	if len(ranked) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(ranked))
	for i, r := range ranked {
		ids[i] = r.Ref.(int64)
	}
	rows, err := tx.Query(ctx, `SELECT i.id, `+ltColumns("NULL::bytea")+` FROM `+s.table+` AS i WHERE i.id = ANY($1)`, ids)
	if err != nil {
		return nil, s.fail("search", err)
	}
	defer rows.Close()
	byID, err := ltrow.ByID(rows, scanLT)
	if err != nil {
		return nil, s.fail("search", err)
	}
	return ltdriver.Results(ranked, byID), nil
}

// unprepared runs a query as an unnamed statement, so that PostgreSQL
// plans it with its values each time. A prepared statement gets a
// generic plan after its fifth run, and the generic plan of a search
// cannot tell a prefix that holds every item from one that holds a few:
// at 100,000 items it read the whole (path, key) index beside the text
// index, 9 ms a search where the planned one takes 2.
func unprepared(args []any) []any {
	return append([]any{pgx.QueryExecModeExec}, args...)
}

// textHits returns the best q.Candidates items by ts_rank, ties in List's
// order; none when no phrase makes a tsquery (TSQuery). ts_rank weighs how often the query's phrases occur and how rare
// they are; it is not normalised by the text's length (its
// normalisations, dividing by the length or its logarithm, punish a
// longer text far more than BM25 does, which would drown a hybrid
// search's vector side).
func (s *LongTerm) textHits(ctx context.Context, tx pgx.Tx, q ltdriver.Search) ([]ltdriver.Hit, error) {
	query := TSQuery(q.Phrases)
	if query == "" {
		return nil, nil
	}
	sql, args := s.textQuery(q, query)
	rows, err := tx.Query(ctx, sql, unprepared(args)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	hits, err := ltrow.Hits(rows, true)
	for i := range hits {
		if hits[i].Text <= 0 {
			hits[i].Text = 1e-9 // a match always scores
		}
	}
	return hits, err
}

// textQuery is textHits' query for the tsquery query: the GIN index on
// tsv finds the matches, the filters cut them.
func (s *LongTerm) textQuery(q ltdriver.Search, query string) (string, []any) {
	f := s.itemFilter(q.Prefix, q.Labels)
	qp := f.next()
	f.add(`i.tsv @@ $?::tsquery`, query)
	limit := f.next()
	return `SELECT i.id, i.namespace, i.key, ts_rank(i.tsv, ` + qp + `::tsquery)::float8 AS score
		FROM ` + s.table + ` AS i WHERE ` + f.sql() + ` ORDER BY score DESC, i.path, i.key LIMIT ` + limit,
		append(f.args, q.Candidates)
}

// vectorHits returns the best q.Candidates items by cosine similarity,
// over every filtered item with a vector of the search's model and
// length.
func (s *LongTerm) vectorHits(ctx context.Context, tx pgx.Tx, q ltdriver.Search) ([]ltdriver.Hit, error) {
	f := s.itemFilter(q.Prefix, q.Labels)
	f.add(`i.vector_model = $? AND length(i.vector) = $?`, q.Model, 4*len(q.Vector))
	rows, err := tx.Query(ctx, `SELECT i.id, i.namespace, i.key, i.vector FROM `+s.table+` AS i WHERE `+f.sql(), unprepared(f.args)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return ltrow.VectorHits[[]byte](rows, q)
}
