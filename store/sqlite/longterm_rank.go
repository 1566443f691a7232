package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// fewMatches is how many matching items fewHits ranks at most; past it,
// FTS5 ranks them.
const fewMatches = 256

// fewHits ranks the items that match (match: q's phrases, and its
// prefix's token or not) and pass q's filters, when at most fewMatches
// items match, and reports whether it did. Its scores are those FTS5's
// bm25() gives, computed here: bm25() weighs each phrase by the items of
// the whole index that hold it, and counts them at every search by
// reading each phrase's list through (and the prefix's token's: every
// item under the prefix), a cost that follows the store's size rather
// than the matches. Here the counts come from indexCounts, kept between
// searches. The items it reads go into read (when not nil), by rowid, for
// the search to return without reading them again.
func (s *LongTerm) fewHits(ctx context.Context, tx *sql.Tx, q ltdriver.Search, match string, at indexState, tokens int64, read map[int64]longterm.Item) ([]ltdriver.Hit, bool, error) {
	ids, err := matchIDs(ctx, tx, s.stmts.match, match, fewMatches+1)
	if err != nil || len(ids) > fewMatches {
		return nil, false, err
	}
	if len(ids) == 0 {
		return nil, true, nil
	}
	f := s.itemFilter(q.Prefix, q.Labels)
	f.add(`i.id IN `+in(len(ids)), ids...)
	// Each item with its size, cut by SQLite from its row of
	// longterm_sizes (NULL where none is held, read from FTS5's below).
	rows, err := tx.QueryContext(ctx, `SELECT i.id, (SELECT substr(s.sizes, (i.id % ?) * 2 + 1, 2) FROM longterm_sizes AS s
			WHERE s.chunk = i.id / ? AND length(s.sizes) = ?), `+itemColumns("NULL")+`
		FROM longterm_items AS i WHERE `+f.sql(), append([]any{sizesPerRow, sizesPerRow, sizesLen}, f.args...)...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var hits []ltdriver.Hit
	var toks [][]string
	var hitIDs []int64
	var sizes []float64
	for rows.Next() {
		var id int64
		var size []byte
		it, err := scanItem(rows, &id, &size)
		if err != nil {
			return nil, false, err
		}
		if size != nil && len(size) != 2 {
			return nil, false, fmt.Errorf("text index: a size read as %d bytes for item %d", len(size), id)
		}
		hits = append(hits, ltdriver.Hit{Namespace: it.Namespace, Key: it.Key, Ref: id})
		hitIDs, sizes = append(hitIDs, id), append(sizes, heldBytes(size))
		toks = append(toks, longterm.Tokens(it.Text))
		if read != nil {
			it.Namespace = s.shown(it.Namespace)
			read[id] = it
		}
	}
	if err := rows.Err(); err != nil || len(hits) == 0 {
		return nil, err == nil, err
	}
	rows.Close()
	if err := docSizes(ctx, tx, hitIDs, sizes); err != nil {
		return nil, false, err
	}
	st, err := s.counts.stats(ctx, tx, s.stmts.vocab, at, tokens, q.Phrases)
	if err != nil {
		return nil, false, err
	}
	for i := range hits {
		hits[i].Text = st.score(q.Phrases, toks[i], sizes[i])
	}
	slices.SortFunc(hits, func(a, b ltdriver.Hit) int {
		if c := cmp.Compare(b.Text, a.Text); c != 0 {
			return c
		}
		return ltdriver.CompareItems(a.Namespace, a.Key, b.Namespace, b.Key)
	})
	return hits[:min(len(hits), q.Candidates)], true, nil
}

// matchIDs returns the rowids of up to limit items that match, in no
// order, with st (matchSQL).
func matchIDs(ctx context.Context, tx *sql.Tx, st *sql.Stmt, match string, limit int) ([]any, error) {
	rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, match, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []any
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// The BM25 parameters of FTS5's bm25().
const (
	fts5K1 = 1.2
	fts5B  = 0.75
)

// indexStats are the figures of the text index that BM25 weighs with: the
// items it holds, their average length in tokens (every column's), and
// the items that hold each phrase of a search.
type indexStats struct {
	rows, avg float64
	idf       []float64
}

// score is bm25() of an item of size tokens (every column's) whose text
// column is toks, for phrases in the text column: the same terms as
// FTS5's, summed in the same order.
func (st indexStats) score(phrases [][]string, toks []string, size float64) float64 {
	score := 0.0
	for i, ph := range phrases {
		score += st.term(i, float64(ltdriver.Count(toks, ph)), size)
	}
	return score
}

// scoreFreqs is score for an item that holds phrase i freqs[i] times.
func (st indexStats) scoreFreqs(freqs []float64, size float64) float64 {
	score := 0.0
	for i, f := range freqs {
		score += st.term(i, f, size)
	}
	return score
}

// term is bm25()'s term for phrase i, held f times by an item of size
// tokens.
func (st indexStats) term(i int, f, size float64) float64 {
	return st.idf[i] * ((f * (fts5K1 + 1.0)) / (f + fts5K1*(1-fts5B+fts5B*size/st.avg)))
}

// fts5IDF is FTS5's inverse document frequency of a phrase that hits of
// rows items hold, floored as FTS5 floors it.
func fts5IDF(rows float64, hits int) float64 {
	idf := math.Log((rows - float64(hits) + 0.5) / (float64(hits) + 0.5))
	if idf <= 0 {
		return 1e-6
	}
	return idf
}

// docSize returns an item's size in tokens from its row in the index's
// docsize table: a varint per column, summed.
func docSize(sz []byte) (float64, error) {
	n, err := varints(sz)
	return float64(n[0] + n[1]), err
}

// varints reads an FTS5 record of SQLite's varints (not Go's) as two
// sums: the first varint, and all the others. A docsize row gives the
// text column's tokens and the namespace column's; the averages record
// the rows, and the tokens of every column.
func varints(b []byte) ([2]int64, error) {
	var out [2]int64
	for i := 0; len(b) > 0; i++ {
		v, n := sqliteVarint(b)
		if n == 0 {
			break
		}
		b = b[n:]
		out[min(i, 1)] += int64(v)
	}
	if len(b) != 0 {
		return out, errors.New("text index: a damaged size record")
	}
	return out, nil
}

// sqliteVarint decodes one of SQLite's big-endian varints (up to nine
// bytes, the ninth whole) and returns it and its length, or 0 and 0.
func sqliteVarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 9; i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// indexCounts keeps, between searches, how many items of the text index
// hold each phrase searched (in their text), and how many are under each
// prefix searched, as of one state of the index (indexState). The store's
// own puts carry the counts on to the state they make; any other change
// of the index leaves them for the next search to drop and count again.
type indexCounts struct {
	mu       sync.Mutex
	at       indexState
	words    map[string]int64 // one-token phrase → items
	multi    map[string]int64 // phrase of several tokens, joined by spaces → items
	prefixes map[string]int64 // stored prefix → items under it, fewItems at most
}

// indexState names a state of the text index: the revision of
// longterm_revision, which every put takes the next of, and the items the
// index holds, which every delete lowers. Two states of one name hold the
// same items.
type indexState struct{ revision, rows int64 }

// The most of each kind that an indexCounts keeps; past one, it starts
// again.
const (
	maxWords    = 8192
	maxMulti    = 64
	maxPrefixes = 1024
)

// readState returns the index's state in tx and the tokens of all its
// rows, from longterm_revision and the averages record of FTS5 (its rows,
// then each column's tokens), with st (stateSQL).
func readState(ctx context.Context, tx *sql.Tx, st *sql.Stmt) (indexState, int64, error) {
	var rev int64
	var avg []byte
	if err := tx.StmtContext(ctx, st).QueryRowContext(ctx).Scan(&rev, &avg); err != nil {
		return indexState{}, 0, err
	}
	tot, err := varints(avg)
	return indexState{rev, tot[0]}, tot[1], err
}

// stats weighs phrases in the index at state at, of tokens in all,
// counting in tx the phrases not held (a plain word with vocab, vocabSQL).
func (c *indexCounts) stats(ctx context.Context, tx *sql.Tx, vocab *sql.Stmt, at indexState, tokens int64, phrases [][]string) (indexStats, error) {
	if at.rows == 0 {
		return indexStats{}, errors.New("text index: no rows, yet matches")
	}
	st := indexStats{rows: float64(at.rows), avg: float64(tokens) / float64(at.rows), idf: make([]float64, len(phrases))}
	for i, ph := range phrases {
		key := strings.Join(ph, " ")
		n, ok := c.get(at, c.phraseTable(ph), key)
		if !ok {
			var err error
			if n, err = phraseItems(ctx, tx, vocab, ph); err != nil {
				return indexStats{}, err
			}
			c.set(at, c.phraseTable(ph), key, n)
		}
		st.idf[i] = fts5IDF(st.rows, int(n))
	}
	return st, nil
}

// phraseItems counts in tx the items whose text holds phrase ph: for one
// plain token, the count longterm_vocab_col keeps of it (with st,
// vocabSQL); else the matches of a MATCH.
func phraseItems(ctx context.Context, tx *sql.Tx, st *sql.Stmt, ph []string) (int64, error) {
	var n int64
	if len(ph) == 1 && plainToken(ph[0]) {
		err := tx.StmtContext(ctx, st).QueryRowContext(ctx, ph[0]).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil
		}
		return n, err
	}
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM longterm_text WHERE longterm_text MATCH ?`,
		"{text} : "+phraseMatch([][]string{ph})).Scan(&n)
	return n, err
}

// known returns the sum of the counts held of phrases at state at, or
// more than fewMatches when one is not held.
func (c *indexCounts) known(at indexState, phrases [][]string) int64 {
	sum := int64(0)
	for _, ph := range phrases {
		n, ok := c.get(at, c.phraseTable(ph), strings.Join(ph, " "))
		if !ok {
			return fewMatches + 1
		}
		sum += n
	}
	return sum
}

// under returns how many items are under a stored prefix at state at,
// up to fewItems, counting them in tx when not held.
func (c *indexCounts) under(ctx context.Context, tx *sql.Tx, at indexState, prefix string) (int64, error) {
	if n, ok := c.get(at, c.prefixTable(), prefix); ok {
		return n, nil
	}
	lo, hi := longterm.PrefixRange(prefix)
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM longterm_items
		WHERE path >= ? AND path < ? LIMIT ?)`, lo, hi, fewItems).Scan(&n); err != nil {
		return 0, err
	}
	c.set(at, c.prefixTable(), prefix, n)
	return n, nil
}

// phraseTable and prefixTable name the maps that hold a count: 0 the
// one-token phrases', 1 the others', 2 the prefixes'.
func (c *indexCounts) phraseTable(ph []string) int {
	if len(ph) == 1 {
		return 0
	}
	return 1
}

func (c *indexCounts) prefixTable() int { return 2 }

// table returns map k (phraseTable); c.mu is held.
func (c *indexCounts) table(k int) (map[string]int64, int) {
	switch k {
	case 0:
		return c.words, maxWords
	case 1:
		return c.multi, maxMulti
	}
	return c.prefixes, maxPrefixes
}

// get returns the count of key in map k at state at, if held.
func (c *indexCounts) get(at indexState, k int, key string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at != at || c.words == nil {
		return 0, false
	}
	m, _ := c.table(k)
	n, ok := m[key]
	return n, ok
}

// set records the count of key in map k at state at, dropping the counts
// of another state.
func (c *indexCounts) set(at indexState, k int, key string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, most := c.table(k)
	if c.at != at || c.words == nil || len(m) >= most {
		c.at, c.words, c.multi, c.prefixes = at, map[string]int64{}, map[string]int64{}, map[string]int64{}
		m, _ = c.table(k)
	}
	m[key] = n
}

// put carries the counts on past a put of the store's own that took
// revision rev and indexed text under the stored path, in place of old
// (replaced true) or as a new row. Counts not of the revision before are
// dropped.
func (c *indexCounts) put(rev int64, path string, replaced bool, old, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.words == nil {
		return
	}
	if c.at.revision != rev-1 {
		c.words, c.multi, c.prefixes = nil, nil, nil
		return
	}
	c.at.revision = rev
	if !replaced {
		c.at.rows++
		for p, n := range c.prefixes {
			if lo, hi := longterm.PrefixRange(p); n < fewItems && path >= lo && path < hi {
				c.prefixes[p] = n + 1
			}
		}
	}
	toks := longterm.Tokens(text)
	var was []string
	if replaced {
		was = longterm.Tokens(old)
	}
	for phrase, n := range c.multi {
		ph := strings.Split(phrase, " ")
		c.multi[phrase] = n + holds(toks, ph) - holds(was, ph)
	}
	delta := map[string]int64{}
	for _, t := range toks {
		delta[t] = 1
	}
	gone := map[string]bool{}
	for _, t := range was {
		if !gone[t] {
			gone[t] = true
			delta[t]-- // 0 where held before and after, -1 where only before
		}
	}
	for t, d := range delta {
		if n, ok := c.words[t]; ok {
			c.words[t] = n + d
		}
	}
}

// holds is 1 when toks hold phrase ph, else 0.
func holds(toks, ph []string) int64 {
	if ltdriver.Count(toks, ph) > 0 {
		return 1
	}
	return 0
}
