package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// A search that ranks many matches over the whole store (rankedHits) has
// FTS5's bm25() score each of them, and bm25() reads each match's size
// from longterm_text_docsize: a row, and often a page, per match. A
// reader's page cache is dropped whenever another connection writes the
// file, so those pages are read again at each search after a write; at
// 100,000 items that was half the time of a search of two words. The
// store keeps the sizes again, 1,000 to a row of longterm_sizes (two bytes
// each), and scores those searches itself from the index's instances of
// each word (longterm_vocab) with the same terms as bm25().

// sizesPerRow is how many items' sizes a row of longterm_sizes holds: the
// items whose rowids divided by it give the row's chunk. Two rows of
// 2,000 bytes fill a page of 4,096; two of 2,048 would not.
const sizesPerRow = 1000

// sizesLen is the length of a row of longterm_sizes.
const sizesLen = 2 * sizesPerRow

// sizeAt returns the row of longterm_sizes that holds the size of item id,
// and the size's offset in it.
func sizeAt(id int64) (chunk int64, off int) {
	return id / sizesPerRow, int(id%sizesPerRow) * 2
}

// heldSize is what longterm_sizes holds for a size: the size, or 0 for one
// too large for two bytes (or none, an item without tokens), which a
// search reads from longterm_text_docsize.
func heldSize(n int64) uint16 {
	if n <= 0 || n >= 1<<16 {
		return 0
	}
	return uint16(n)
}

// setSize records the size of item id's entry in the text index, written
// by tx, in longterm_sizes: the last step of each Put.
func setSize(ctx context.Context, tx *sql.Tx, id int64) error {
	chunk, off := sizeAt(id)
	var sz, sizes []byte
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT sz FROM longterm_text_docsize WHERE id = ?1),
		(SELECT sizes FROM longterm_sizes WHERE chunk = ?2)`, id, chunk).Scan(&sz, &sizes); err != nil {
		return err
	}
	n, err := varints(sz)
	if err != nil {
		return err
	}
	if len(sizes) != sizesLen {
		sizes = make([]byte, sizesLen) // a new row; or a damaged one, which holds no size from now on
	}
	binary.LittleEndian.PutUint16(sizes[off:], heldSize(n[0]+n[1]))
	_, err = tx.ExecContext(ctx, `INSERT INTO longterm_sizes (chunk, sizes) VALUES (?, ?)
		ON CONFLICT (chunk) DO UPDATE SET sizes = excluded.sizes`, chunk, sizes)
	return err
}

// clearSizes sets to 0 the sizes of the erased items ids, so that
// longterm_sizes keeps nothing of an erased item.
func clearSizes(ctx context.Context, tx *sql.Tx, ids []int64) error {
	byChunk := map[int64][]int{}
	for _, id := range ids {
		chunk, off := sizeAt(id)
		byChunk[chunk] = append(byChunk[chunk], off)
	}
	for _, chunk := range slices.Sorted(maps.Keys(byChunk)) {
		var sizes []byte
		err := tx.QueryRowContext(ctx, `SELECT sizes FROM longterm_sizes WHERE chunk = ?`, chunk).Scan(&sizes)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		if len(sizes) != sizesLen {
			sizes = make([]byte, sizesLen) // damaged: it holds nothing from now on
		}
		for _, off := range byChunk[chunk] {
			binary.LittleEndian.PutUint16(sizes[off:], 0)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE longterm_sizes SET sizes = ? WHERE chunk = ?`, sizes, chunk); err != nil {
			return err
		}
	}
	return nil
}

// fillSizes fills longterm_sizes from longterm_text_docsize: the Go part
// of migration 11.
func fillSizes(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, sz FROM longterm_text_docsize ORDER BY id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	chunks := map[int64][]byte{}
	for rows.Next() {
		var id int64
		var sz []byte
		if err := rows.Scan(&id, &sz); err != nil {
			return err
		}
		n, err := varints(sz)
		if err != nil {
			return fmt.Errorf("text index, size of item %d: %w", id, err)
		}
		chunk, off := sizeAt(id)
		if chunks[chunk] == nil {
			chunks[chunk] = make([]byte, sizesLen)
		}
		binary.LittleEndian.PutUint16(chunks[chunk][off:], heldSize(n[0]+n[1]))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	for _, chunk := range slices.Sorted(maps.Keys(chunks)) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO longterm_sizes (chunk, sizes) VALUES (?, ?)`, chunk, chunks[chunk]); err != nil {
			return err
		}
	}
	return nil
}

// plainToken reports whether tok holds only lower-case ASCII letters and
// digits: a token that FTS5's tokenizer keeps as it is, so that it is the
// term longterm_vocab names.
func plainToken(tok string) bool {
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return tok != ""
}

// plainPhrases reports whether every phrase is one plain token.
func plainPhrases(phrases [][]string) bool {
	for _, ph := range phrases {
		if len(ph) != 1 || !plainToken(ph[0]) {
			return false
		}
	}
	return true
}

// docFreq is an item and how many times it holds a word in its text.
type docFreq struct {
	id int64
	n  float64
}

// vocabScores returns the rowid and bm25() score of every item of the
// index that matches q's phrases in its text, best first, as rankedRows
// does, when every phrase is one plain token; ok is false otherwise. It
// reads each word's instances, which give both the items that hold it and
// how many items do (which bm25() weighs it by, and the counts keep), and
// the items' sizes from longterm_sizes.
func (s *LongTerm) vocabScores(ctx context.Context, tx *sql.Tx, q ltdriver.Search, at indexState, tokens int64) (_ []scored, ok bool, _ error) {
	if !plainPhrases(q.Phrases) {
		return nil, false, nil
	}
	if at.rows == 0 {
		return nil, true, nil
	}
	st := indexStats{rows: float64(at.rows), avg: float64(tokens) / float64(at.rows), idf: make([]float64, len(q.Phrases))}
	lists := make([][]docFreq, len(q.Phrases))
	for i, ph := range q.Phrases {
		l, err := instances(ctx, tx, ph[0])
		if err != nil {
			return nil, false, err
		}
		lists[i] = l
		st.idf[i] = fts5IDF(st.rows, len(l))
		s.counts.set(at, s.counts.phraseTable(ph), ph[0], int64(len(l)))
	}
	// Merge the lists, each in rowid order, into the items that match,
	// with each word's count (freqs, len(lists) an item).
	var ids []int64
	var freqs []float64
	next := make([]int, len(lists))
	for {
		id := int64(-1)
		for i, l := range lists {
			if next[i] < len(l) && (id < 0 || l[next[i]].id < id) {
				id = l[next[i]].id
			}
		}
		if id < 0 {
			break
		}
		ids = append(ids, id)
		for i, l := range lists {
			f := 0.0
			if next[i] < len(l) && l[next[i]].id == id {
				f = l[next[i]].n
				next[i]++
			}
			freqs = append(freqs, f)
		}
	}
	sizes, err := itemSizes(ctx, tx, ids)
	if err != nil {
		return nil, false, err
	}
	out := make([]scored, len(ids))
	for j, id := range ids {
		out[j] = scored{id, st.scoreFreqs(freqs[j*len(lists):(j+1)*len(lists)], sizes[j])}
	}
	sortScored(out)
	return out, true, nil
}

// sortScored sorts matches best first, and by rowid among equal scores,
// the order in which FTS5 gives them.
func sortScored(out []scored) {
	slices.SortFunc(out, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
}

// instances returns the items whose text holds the token tok, in rowid
// order, with how many times each does.
func instances(ctx context.Context, tx *sql.Tx, tok string) ([]docFreq, error) {
	// One row, the rowids joined by commas, as cutSizes reads its sizes.
	var list []byte
	if err := tx.QueryRowContext(ctx, `SELECT group_concat(doc, ',') FROM longterm_vocab WHERE term = ? AND col = 'text'`, tok).Scan(&list); err != nil {
		return nil, err
	}
	var out []docFreq
	sorted := true
	for f := range bytes.SplitSeq(list, []byte{','}) {
		if len(list) == 0 {
			break
		}
		id, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("text index: an instance of %q read as %q", tok, f)
		}
		switch last := len(out) - 1; {
		case last >= 0 && out[last].id == id:
			out[last].n++
		default:
			sorted = sorted && (last < 0 || out[last].id < id)
			out = append(out, docFreq{id, 1})
		}
	}
	return mergeRuns(out, sorted), nil
}

// mergeRuns returns out sorted by rowid, each item's runs added up, when
// it is not sorted.
func mergeRuns(out []docFreq, sorted bool) []docFreq {
	if !sorted {
		// Not in rowid order, as FTS5 gives them: sort, and add up each
		// item's runs.
		slices.SortFunc(out, func(a, b docFreq) int { return cmp.Compare(a.id, b.id) })
		merged := out[:0]
		for _, d := range out {
			if k := len(merged) - 1; k >= 0 && merged[k].id == d.id {
				merged[k].n += d.n
			} else {
				merged = append(merged, d)
			}
		}
		out = merged
	}
	return out
}

// itemSizes returns the sizes in tokens (every column's) of the entries
// of items ids, from longterm_sizes, or
// longterm_text_docsize for those it does not hold. Where the items are
// many to a row of sizes, it reads the rows whole; otherwise SQLite cuts
// each item's two bytes from its row.
func itemSizes(ctx context.Context, tx *sql.Tx, ids []int64) ([]float64, error) {
	var chunks []any
	for _, id := range ids {
		if c, _ := sizeAt(id); len(chunks) == 0 || chunks[len(chunks)-1] != any(c) {
			chunks = append(chunks, c)
		}
	}
	sizes := make([]float64, len(ids))
	var err error
	if len(ids) >= 16*len(chunks) {
		err = wholeSizes(ctx, tx, ids, chunks, sizes)
	} else {
		err = cutSizes(ctx, tx, ids, sizes)
	}
	if err != nil {
		return nil, err
	}
	return sizes, docSizes(ctx, tx, ids, sizes)
}

// heldBytes is the size a row of longterm_sizes holds in b, its two bytes
// (0 where b is not two bytes: none held).
func heldBytes(b []byte) float64 {
	if len(b) != 2 {
		return 0
	}
	return float64(binary.LittleEndian.Uint16(b))
}

// docSizes sets each sizes[j] that is 0 (not held in longterm_sizes) to
// the size longterm_text_docsize holds of item ids[j].
func docSizes(ctx context.Context, tx *sql.Tx, ids []int64, sizes []float64) error {
	var missing []any
	where := map[int64]int{}
	for j, id := range ids {
		if sizes[j] == 0 {
			missing, where[id] = append(missing, id), j
		}
	}
	for len(missing) > 0 {
		batch := missing[:min(len(missing), 500)]
		missing = missing[len(batch):]
		rows, err := tx.QueryContext(ctx, `SELECT id, sz FROM longterm_text_docsize WHERE id IN `+in(len(batch)), batch...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var sz []byte
			if err := rows.Scan(&id, &sz); err != nil {
				rows.Close()
				return err
			}
			n, err := docSize(sz)
			if err != nil {
				rows.Close()
				return err
			}
			sizes[where[id]] = n
			delete(where, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for id := range where {
		return fmt.Errorf("text index: no size for item %d", id)
	}
	return nil
}

// cutSizes sets sizes[j] to the size longterm_sizes holds of item ids[j],
// cut from its row by SQLite. They come in one row, each size with its
// place in ids, "j:HHHH" (the two bytes in hex), joined by commas: one
// value handed over rather than a row for each item, 15% of a search of
// every item of 100,000 (docs/PERFORMANCE.md).
func cutSizes(ctx context.Context, tx *sql.Tx, ids []int64, sizes []float64) error {
	list := make([]byte, 0, 8*len(ids))
	list = append(list, '[')
	for j, id := range ids {
		if j > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, id, 10)
	}
	list = append(list, ']')
	var held []byte
	if err := tx.QueryRowContext(ctx, `SELECT group_concat(j.key || ':' || hex(substr(s.sizes, (j.value % ?1) * 2 + 1, 2)), ',')
		FROM json_each(?2) AS j CROSS JOIN longterm_sizes AS s ON s.chunk = j.value / ?1
		WHERE length(s.sizes) = ?3`, sizesPerRow, list, sizesLen).Scan(&held); err != nil {
		return err
	}
	for f := range bytes.SplitSeq(held, []byte{','}) {
		if len(held) == 0 {
			break
		}
		k, h, _ := bytes.Cut(f, []byte{':'})
		j, err := strconv.Atoi(string(k))
		var b [2]byte
		if err != nil || j < 0 || j >= len(ids) || len(h) != 4 {
			return fmt.Errorf("text index: a size read as %q of %d", f, len(ids))
		}
		if _, err := hex.Decode(b[:], h); err != nil {
			return fmt.Errorf("text index: a size read as %q of %d", f, len(ids))
		}
		sizes[j] = float64(binary.LittleEndian.Uint16(b[:]))
	}
	return nil
}

// wholeSizes is cutSizes reading the rows of longterm_sizes that hold
// the sizes (chunks) whole.
func wholeSizes(ctx context.Context, tx *sql.Tx, ids []int64, chunks []any, sizes []float64) error {
	held := make(map[int64][]byte, len(chunks))
	for len(chunks) > 0 {
		batch := chunks[:min(len(chunks), 500)]
		chunks = chunks[len(batch):]
		rows, err := tx.QueryContext(ctx, `SELECT chunk, sizes FROM longterm_sizes WHERE chunk IN `+in(len(batch)), batch...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c int64
			var b []byte
			if err := rows.Scan(&c, &b); err != nil {
				rows.Close()
				return err
			}
			if len(b) == sizesLen {
				held[c] = b
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for j, id := range ids {
		if c, off := sizeAt(id); held[c] != nil {
			sizes[j] = float64(binary.LittleEndian.Uint16(held[c][off:]))
		}
	}
	return nil
}
