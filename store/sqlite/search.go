package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/unixnano"
	"github.com/cairnhq/cairn/longterm"
)

var _ driver.Searcher = (*Store)(nil)

// maxRankedEvents is how many of FTS5's best events Search reads at most
// before it reads every event that matches.
const maxRankedEvents = 4096

// Search implements driver.Searcher. It first indexes the texts still
// pending, whichever process appended them (indexPending). FTS5 ranks the
// events that match the query by bm25 (its statistics are over the whole
// file, every namespace together), and the best of them are joined to
// their sessions, keeping the live sessions of the store's namespace:
// first 4×limit+16 events, then four times as many while too few sessions
// pass and more events match, up to maxRankedEvents, after which every
// match is read. Its cost follows the number of events its words match,
// not the size of the store. Which of several events that tie at the last
// place read FTS5 returns is its own choice. Each round is one statement,
// which sees the file as it is at one moment.
func (s *Store) Search(ctx context.Context, query string, limit int) ([]driver.SearchHit, error) {
	phrases, err := s.guard.Search(query, limit)
	if err != nil || len(phrases) == 0 {
		return nil, err
	}
	if err := s.catchUp(ctx); err != nil {
		return nil, s.fail("search", "", err)
	}
	match := phraseMatch(phrases)
	now := unixnano.Of(s.opts.Now())
	for k := 16 + 4*min(limit, maxRankedEvents); ; k *= 4 {
		if k > maxRankedEvents {
			k = -1 // no limit
		}
		hits, read, err := s.rankedEvents(ctx, match, k, now)
		if err != nil {
			return nil, s.fail("search", "", err)
		}
		if k < 0 || read < k || len(hits) >= limit {
			return driver.BestPerSession(hits, limit), nil
		}
	}
}

// rankedSQL reads FTS5's ?2 best events for the query ?1 (every one for
// -1), each with its session, and whether the session is a live one of
// the namespace ?3 at ?4. It sorts by bm25() itself: ORDER BY rank would
// have FTS5 prepare a statement of its own for each search, which costs
// more than the sort.
const rankedSQL = `SELECT t.session_id, t.seq, r.score, s.id IS NOT NULL
	FROM (SELECT rowid AS id, -bm25(search_index) AS score FROM search_index WHERE search_index MATCH ?1
		ORDER BY score DESC LIMIT ?2) AS r
	JOIN search_texts AS t ON t.id = r.id
	LEFT JOIN sessions AS s ON t.namespace = ?3 AND s.namespace = ?3 AND s.id = t.session_id
		AND (s.expires_at = 0 OR s.expires_at > ?4)`

// rankedEvents reads FTS5's k best events for match (every one when k is
// -1) and returns the best of each live session of the namespace among
// them, and how many events it read.
func (s *Store) rankedEvents(ctx context.Context, match string, k int, now int64) ([]driver.SearchHit, int, error) {
	rows, err := s.ranked.QueryContext(ctx, match, k, s.opts.Namespace, now)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	best := map[string]driver.SearchHit{}
	read := 0
	for rows.Next() {
		var h driver.SearchHit
		var live bool
		if err := rows.Scan(&h.ID, &h.Seq, &h.Score, &live); err != nil {
			return nil, 0, err
		}
		read++
		if b, ok := best[h.ID]; live && (!ok || cmp.Or(cmp.Compare(b.Score, h.Score), cmp.Compare(h.Seq, b.Seq)) < 0) {
			best[h.ID] = h
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	hits := make([]driver.SearchHit, 0, len(best))
	for _, h := range best {
		hits = append(hits, h)
	}
	return hits, read, nil
}

// phraseMatch returns the FTS5 query that matches any of phrases: each
// a quoted string, joined by OR. Tokens hold letters and digits only, so
// nothing in them is FTS5 syntax.
func phraseMatch(phrases [][]string) string {
	parts := make([]string, len(phrases))
	for i, p := range phrases {
		parts[i] = `"` + strings.Join(p, " ") + `"`
	}
	return strings.Join(parts, " OR ")
}

// searchTexts returns the texts that Append indexes for events, by
// position: each event's SearchText, or "" for one without a token.
func searchTexts(events []cairn.Event) []string {
	var out []string
	for i, e := range events {
		if t := e.SearchText(); longterm.HasToken(t) {
			if out == nil {
				out = make([]string, len(events))
			}
			out[i] = t
		}
	}
	return out
}

// indexEvery is how many texts a store appends before it brings the
// search index up to date itself; a search does it first whatever the
// count (migration 0010).
const indexEvery = 256

// textCount is how many of r's events have a text to index.
func (r *appendReq) textCount() int {
	n := 0
	for _, t := range r.texts {
		if t != "" {
			n++
		}
	}
	return n
}

// indexed counts n texts committed as pending and, from indexEvery on,
// indexes the pending texts. An error there is left to the next search,
// which tries again and reports it: the appends are committed.
func (s *Store) indexed(ctx context.Context, n int) {
	if n > 0 && s.pending.Add(int64(n)) >= indexEvery {
		_ = s.indexPending(context.WithoutCancel(ctx))
	}
}

// indexSQL inserts an event's text, pending: its id is above both the
// highest id of the table and the index's mark (migration 0010), so that
// an id given to a text already indexed and deleted since is not given
// again below the mark.
const indexSQL = `INSERT INTO search_texts (id, namespace, session_id, seq, text)
	VALUES (max((SELECT coalesce(max(id), 0) FROM search_texts), (SELECT indexed FROM search_state)) + 1, ?, ?, ?, ?)`

// pendingSQL is the condition of a pending text.
const pendingSQL = `id > (SELECT indexed FROM search_state)`

// catchUp indexes the pending texts, if there are any, before a search.
func (s *Store) catchUp(ctx context.Context) error {
	var pending bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM search_texts WHERE `+pendingSQL+`)`).Scan(&pending); err != nil || !pending {
		return err
	}
	return s.indexPending(ctx)
}

// indexPending adds every pending text, whichever process appended it,
// to the search index in one statement (one FTS5 segment) and moves the
// mark past them, in one transaction.
func (s *Store) indexPending(ctx context.Context) error {
	s.indexMu.Lock()
	defer s.indexMu.Unlock()
	s.pending.Store(0)
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO search_index (rowid, text) SELECT id, text FROM search_texts WHERE `+pendingSQL); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE search_state SET indexed = max(indexed, (SELECT coalesce(max(id), 0) FROM search_texts))`)
		return err
	})
}

// indexFromSQL adds the texts from an id on to the search index: the
// migration of the events stored before the index (0008).
const indexFromSQL = `INSERT INTO search_index (rowid, text) SELECT id, text FROM search_texts WHERE id >= ?`

// indexBatch is how many events indexEvents reads at once.
const indexBatch = 1000

// indexEvents indexes the events stored before migration 0008, in the
// order of their key, indexBatch at a time. An event whose envelope fails
// its checksum or does not decode is left out: Load reports it.
func indexEvents(ctx context.Context, tx *sql.Tx) error {
	insert, err := tx.PrepareContext(ctx, `INSERT INTO search_texts (namespace, session_id, seq, text) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer insert.Close()
	type event struct {
		ns, id string
		seq    int64
		text   string
	}
	var (
		last    = event{seq: -1 << 63}
		op      = ">="
		scratch []byte
	)
	for {
		rows, err := tx.QueryContext(ctx, `SELECT namespace, session_id, seq, envelope FROM events
			WHERE (namespace, session_id, seq) `+op+` (?, ?, ?) ORDER BY namespace, session_id, seq LIMIT ?`,
			last.ns, last.id, last.seq, indexBatch)
		if err != nil {
			return err
		}
		var batch []event
		n := 0
		for rows.Next() {
			var raw sql.RawBytes
			if err := rows.Scan(&last.ns, &last.id, &last.seq, &raw); err != nil {
				rows.Close()
				return err
			}
			n++
			e, _, msg := storedEvent(raw, &scratch, false)
			if msg != "" {
				continue
			}
			if t := e.SearchText(); longterm.HasToken(t) {
				batch = append(batch, event{last.ns, last.id, last.seq, t})
			}
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return err
		}
		rows.Close()
		for _, e := range batch {
			if _, err := insert.ExecContext(ctx, e.ns, e.id, e.seq, e.text); err != nil {
				return err
			}
		}
		if n < indexBatch {
			_, err := tx.ExecContext(ctx, indexFromSQL, 0)
			return err
		}
		op = ">"
	}
}
