package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

var _ driver.Searcher = (*Store)(nil)

// textSQL is the part of an append's statement that indexes its events
// for Search, and runs only if the UPDATE u matched: their rows in
// session_text, and their number and tokens added to the totals' row of
// the server process. Its parameters, from $n on: the seqs, tsvectors
// (TSVector's text) and lengths of the events with text (searchTexts);
// with one, those of the one event, NULL when it has no text (scalars
// cost pgx less to send than arrays).
func textSQL(schema string, n int, one bool) string {
	p := func(i int) string { return "$" + strconv.Itoa(n+i) }
	texts := pgx.Identifier{schema, "session_text"}.Sanitize()
	totals := pgx.Identifier{schema, "session_text_totals"}.Sanitize()
	if one {
		seq, tsv, n := p(0)+"::bigint", p(1)+"::text", p(2)+"::integer"
		return `, txt AS (
				INSERT INTO ` + texts + ` (session_id, seq, tsv, len)
				SELECT u.id, ` + seq + `, ` + tsv + `::tsvector, ` + n + ` FROM u WHERE ` + seq + ` IS NOT NULL
			), tot AS (
				UPDATE ` + totals + ` SET docs = docs + 1, tokens = tokens + ` + n + `
				FROM u WHERE slot = pg_backend_pid() % 64 AND ` + seq + ` IS NOT NULL
			)`
	}
	seqs, tsvs, lens := p(0)+"::bigint[]", p(1)+"::text[]", p(2)+"::integer[]"
	return `, txt AS (
				INSERT INTO ` + texts + ` (session_id, seq, tsv, len)
				SELECT u.id, x.seq, x.tsv::tsvector, x.len FROM u, unnest(` + seqs + `, ` + tsvs + `, ` + lens + `) AS x(seq, tsv, len)
			), tot AS (
				UPDATE ` + totals + ` SET
					docs = docs + cardinality(` + seqs + `),
					tokens = tokens + (SELECT sum(l) FROM unnest(` + lens + `) AS l)
				FROM u WHERE slot = pg_backend_pid() % 64 AND cardinality(` + seqs + `) > 0
			)`
}

// textArgs are searchTexts' results as textSQL's parameters: the arrays,
// or for one event its values, nil when it has no text.
func textArgs(events []cairn.Event) (seq, tsv, n any) {
	seqs, tsvs, lens := searchTexts(events)
	switch {
	case len(events) != 1:
		return seqs, tsvs, lens
	case len(seqs) == 0:
		return nil, nil, nil
	}
	return seqs[0], tsvs[0], lens[0]
}

// searchSQL is Search's query: the events whose tsvector matches the
// tsquery $1, found through the GIN index, each with its session's
// liveness at $2 and its tsvector in binary form (tsvectorsend, which
// costs the server a copy, where unnest would build a row and two arrays
// for every token); and, the same on every row, the totals.
func searchSQL(schema string) string {
	texts := pgx.Identifier{schema, "session_text"}.Sanitize()
	totals := pgx.Identifier{schema, "session_text_totals"}.Sanitize()
	sessions := pgx.Identifier{schema, "sessions"}.Sanitize()
	return `SELECT (SELECT ARRAY[sum(docs), sum(tokens)]::float8[] FROM ` + totals + `),
			t.session_id, t.seq, t.len, (s.expires_at IS NULL OR s.expires_at > $2), tsvectorsend(t.tsv)
		FROM ` + texts + ` t JOIN ` + sessions + ` s ON s.id = t.session_id
		WHERE t.tsv @@ $1::tsquery`
}

// searchTexts returns what an append indexes of events: the seqs of the
// events whose SearchText has a token, and each one's tsvector and length
// in tokens.
func searchTexts(events []cairn.Event) (seqs []int64, tsvs []string, lens []int32) {
	for _, e := range events {
		toks := longterm.Tokens(e.SearchText())
		if len(toks) == 0 {
			continue
		}
		seqs = append(seqs, e.Seq)
		tsvs = append(tsvs, tsvector(toks))
		lens = append(lens, int32(min(len(toks), math.MaxInt32)))
	}
	return seqs, tsvs, lens
}

// searchQuery is a search's query as the scoring reads it: its distinct
// tokens, and each phrase as the indexes of its tokens among them.
type searchQuery struct {
	tokens  []string
	phrases [][]int
}

func newSearchQuery(phrases [][]string) searchQuery {
	var q searchQuery
	for _, p := range phrases {
		ix := make([]int, len(p))
		for i, t := range p {
			ix[i] = slices.Index(q.tokens, t)
			if ix[i] < 0 {
				ix[i] = len(q.tokens)
				q.tokens = append(q.tokens, t)
			}
		}
		q.phrases = append(q.phrases, ix)
	}
	return q
}

// searchDoc is an event that a search's query matched.
type searchDoc struct {
	id   string
	seq  int64
	len  int64
	live bool
	pos  [][]uint16 // the positions of each of the query's tokens
}

// Search implements driver.Searcher: one query finds the matching events
// through the GIN index, with the totals and each event's tsvector, and
// BM25 is computed here over the namespace's events (a session expired but
// not yet swept still counts in the statistics, as in FTS5, but is not
// returned).
func (s *Store) Search(ctx context.Context, query string, limit int) ([]driver.SearchHit, error) {
	if err := s.guard.Check(); err != nil {
		return nil, err
	}
	phrases, args := s.searchArgs(query)
	if args == nil || limit <= 0 {
		return nil, nil
	}
	q := newSearchQuery(phrases)
	rows, err := s.pool.Query(ctx, s.sql.search, unprepared(args)...)
	if err != nil {
		return nil, fmt.Errorf("search: %w", translate(err))
	}
	defer rows.Close()
	var (
		totals []float64 // the events, their tokens
		docs   []searchDoc
		tsv    []byte
	)
	for rows.Next() {
		var d searchDoc
		dest := any(&totals) // on the first row; the same on every row
		if len(docs) > 0 {
			dest = nil
		}
		if err := rows.Scan(dest, &d.id, &d.seq, &d.len, &d.live, &tsv); err != nil {
			return nil, fmt.Errorf("search: %w", translate(err))
		}
		if d.pos, err = tokenPositions(tsv, q.tokens); err != nil {
			return nil, fmt.Errorf("search: %s seq %d: %w", d.id, d.seq, err)
		}
		docs = append(docs, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: %w", translate(err))
	}
	if len(docs) == 0 || len(totals) != 2 {
		return nil, nil
	}
	return driver.BestPerSession(bm25(docs, q, totals[0], totals[1]), limit), nil
}

// searchArgs returns the phrases of query and the arguments of the
// search's query; none when no phrase can match.
func (s *Store) searchArgs(query string) ([][]string, []any) {
	phrases := longterm.Phrases(query)
	tsq := TSQuery(phrases)
	if tsq == "" {
		return nil, nil
	}
	return phrases, []any{tsq, s.opts.Now().UTC()}
}

// tokenPositions reads a tsvector in the binary form of tsvectorsend (a
// count of lexemes; each a NUL-terminated string, a count of positions
// and the positions, 16 bits each, big-endian, the weight in the top two
// bits) and returns the positions of each of tokens, nil for one it does
// not hold.
func tokenPositions(b []byte, tokens []string) ([][]uint16, error) {
	bad := errBadTSVector
	if len(b) < 4 {
		return nil, bad
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	out := make([][]uint16, len(tokens))
	for range n {
		end := bytes.IndexByte(b, 0)
		if end < 0 || len(b) < end+3 {
			return nil, bad
		}
		lexeme := b[:end]
		npos := int(binary.BigEndian.Uint16(b[end+1:]))
		b = b[end+3:]
		if len(b) < 2*npos {
			return nil, bad
		}
		for i, t := range tokens {
			if string(lexeme) == t {
				pos := make([]uint16, npos)
				for j := range pos {
					pos[j] = binary.BigEndian.Uint16(b[2*j:]) & 0x3fff
				}
				out[i] = pos
			}
		}
		b = b[2*npos:]
	}
	return out, nil
}

var errBadTSVector = errors.New("the tsvector does not decode")

// bm25 scores docs, the events that hold one of q's phrases, as FTS5's
// bm25() does, over n events of tokens tokens in all, and returns the
// live ones.
func bm25(docs []searchDoc, q searchQuery, n, tokens float64) []driver.SearchHit {
	if n <= 0 || len(docs) == 0 {
		return nil
	}
	avg := tokens / n
	scores := make([]float64, len(docs))
	freq := make([]int, len(docs))
	for _, p := range q.phrases {
		matched := 0
		for i, d := range docs {
			freq[i] = occurrences(d.pos, p)
			if freq[i] > 0 {
				matched++
			}
		}
		if matched == 0 {
			continue
		}
		idf := ltdriver.IDF(n, float64(matched))
		for i, d := range docs {
			if f := float64(freq[i]); f > 0 {
				scores[i] += ltdriver.BM25(idf, f, float64(d.len), avg)
			}
		}
	}
	var hits []driver.SearchHit
	for i, d := range docs {
		if d.live && scores[i] > 0 {
			hits = append(hits, driver.SearchHit{ID: d.id, Seq: d.seq, Score: scores[i]})
		}
	}
	return hits
}

// occurrences counts the places where phrase p (indexes into pos) starts
// in an event whose tokens are at the positions pos (ascending, as a
// tsvector keeps them).
func occurrences(pos [][]uint16, p []int) int {
	first := pos[p[0]]
	if len(p) == 1 {
		return len(first)
	}
	c := 0
	for _, at := range first {
		ok := true
		for j := 1; ok && j < len(p); j++ {
			_, ok = slices.BinarySearch(pos[p[j]], at+uint16(j))
		}
		if ok {
			c++
		}
	}
	return c
}

// indexBatch is how many events indexEvents reads at a time.
const indexBatch = 5000

// indexEvents is migration 0008's Go step: it writes the session_text
// rows of the events already stored, and their totals, reading the events
// in primary key order a batch at a time. An envelope that does not
// decode is left out, as Load would refuse it.
func indexEvents(ctx context.Context, tx pgx.Tx) error {
	var (
		after       string
		afterSeq    int64
		docs, total int64
	)
	for {
		rows, err := tx.Query(ctx, `SELECT session_id, seq, envelope FROM events
			WHERE (session_id, seq) > ($1, $2) ORDER BY session_id, seq LIMIT $3`, after, afterSeq, indexBatch)
		if err != nil {
			return err
		}
		var (
			ids, tsvs []string
			seqs      []int64
			lens      []int32
			read      int
		)
		for rows.Next() {
			var env []byte
			if err := rows.Scan(&after, &afterSeq, &env); err != nil {
				rows.Close()
				return err
			}
			read++
			e, ok := driver.ParseEnvelope(env)
			if !ok && json.Unmarshal(env, &e) != nil {
				continue
			}
			e.Seq = afterSeq
			s, t, l := searchTexts([]cairn.Event{e})
			if len(s) == 0 {
				continue
			}
			ids, seqs, tsvs, lens = append(ids, after), append(seqs, s[0]), append(tsvs, t[0]), append(lens, l[0])
			docs, total = docs+1, total+int64(l[0])
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO session_text (session_id, seq, tsv, len)
				SELECT x.id, x.seq, x.tsv::tsvector, x.len FROM unnest($1::text[], $2::bigint[], $3::text[], $4::integer[]) AS x(id, seq, tsv, len)`,
				ids, seqs, tsvs, lens); err != nil {
				return err
			}
		}
		if read < indexBatch {
			break
		}
	}
	_, err := tx.Exec(ctx, `UPDATE session_text_totals SET docs = docs + $1, tokens = tokens + $2 WHERE slot = 0`, docs, total)
	return err
}
