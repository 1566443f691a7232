package memory

import (
	"context"
	"strconv"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// textIndex returns the namespace's index of event texts, with db.mu held.
func (s *Store) textIndex() *ltdriver.Index {
	if s.db.texts == nil {
		s.db.texts = map[string]*ltdriver.Index{}
	}
	x := s.db.texts[s.opts.Namespace]
	if x == nil {
		x = ltdriver.NewIndex()
		s.db.texts[s.opts.Namespace] = x
	}
	return x
}

// docID is the index's ID of a session's event.
func docID(id string, seq int64) string { return id + "\x00" + strconv.FormatInt(seq, 10) }

// index adds the texts of events, just appended to ss, with db.mu held.
func (s *Store) index(ss *session, events []cairn.Event) {
	for _, e := range events {
		if t := e.SearchText(); longterm.HasToken(t) {
			s.textIndex().SetText(docID(ss.info.ID, e.Seq), t)
			ss.indexed = append(ss.indexed, e.Seq)
		}
	}
}

// drop deletes session id and its texts, with db.mu held.
func (s *Store) drop(id string) {
	if ss := s.ns()[id]; ss != nil {
		for _, seq := range ss.indexed {
			s.textIndex().Remove(docID(id, seq))
		}
	}
	delete(s.ns(), id)
}

// Search implements driver.Searcher over the namespace's index, which
// scores as SQLite's FTS5 does.
func (s *Store) Search(ctx context.Context, query string, limit int) ([]driver.SearchHit, error) {
	phrases, err := s.guard.Search(query, limit)
	if err != nil || len(phrases) == 0 {
		return nil, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	x := s.textIndex()
	var hits []driver.SearchHit
	for doc, score := range ltdriver.Score([]*ltdriver.Index{x}, phrases, nil)[x] {
		id, seq, _ := strings.Cut(doc, "\x00")
		if s.live(id) == nil {
			continue
		}
		n, _ := strconv.ParseInt(seq, 10, 64)
		hits = append(hits, driver.SearchHit{ID: id, Seq: n, Score: score})
	}
	return driver.BestPerSession(hits, limit), nil
}
