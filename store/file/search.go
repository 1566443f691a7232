//go:build linux || darwin

package file

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

var _ driver.Searcher = (*Store)(nil)

// searchIndex is a store's text index of its namespace's events, in
// memory: built by its first search from every session's search.jsonl,
// and kept up by each later one with the sessions changed since, as the
// feed names them (search_feed.go). BM25's statistics are over the
// events it holds: the namespace's.
type searchIndex struct {
	mu       sync.Mutex // held by a search
	built    bool
	x        *ltdriver.Index     // the events, as docKey
	sessions map[string]*indexed // by ID
	tokens   map[string]string   // session token → ID, for the feed's deletions
	feedGen  uint64              // the feed's generation and length read
	feedOff  int64

	touchMu sync.Mutex
	touched map[string]bool // sessions this store appended to or deleted since the last search
}

// indexed is what the index holds of a session: how far it read which
// search.jsonl, and the seqs of its events in the index.
type indexed struct {
	token string
	file  fileID
	off   int64     // the end of the lines read
	last  int64     // the last seq they cover
	log   int64     // the log's length after it
	at    time.Time // the session's updated time after them
	seqs  []int64
}

// docKey is an event's ID in the index.
func docKey(id string, seq int64) string { return id + " " + strconv.FormatInt(seq, 10) }

func splitKey(key string) (string, int64) {
	i := strings.LastIndexByte(key, ' ')
	seq, _ := strconv.ParseInt(key[i+1:], 10, 64)
	return key[:i], seq
}

// touch marks session id for the next search to read again.
func (x *searchIndex) touch(id string) {
	x.touchMu.Lock()
	defer x.touchMu.Unlock()
	if x.touched == nil {
		x.touched = map[string]bool{}
	}
	x.touched[id] = true
}

func (x *searchIndex) takeTouched() []string {
	x.touchMu.Lock()
	defer x.touchMu.Unlock()
	ids := make([]string, 0, len(x.touched))
	for id := range x.touched {
		ids = append(ids, id)
	}
	clear(x.touched)
	return ids
}

// drop takes session id out of the index.
func (x *searchIndex) drop(id string) {
	d := x.sessions[id]
	if d == nil {
		return
	}
	for _, seq := range d.seqs {
		x.x.Remove(docKey(id, seq))
	}
	delete(x.tokens, d.token)
	delete(x.sessions, id)
}

// apply adds what c read of session id's search.jsonl: the lines after
// the index's, or the whole of another file.
func (x *searchIndex) apply(id string, c searchChunk) {
	d := x.sessions[id]
	if d != nil && (d.token != c.token || d.file != c.file || d.off != c.start) {
		x.drop(id)
		d = nil
	}
	if d == nil {
		d = &indexed{token: c.token, file: c.file}
		x.sessions[id] = d
		x.tokens[c.token] = id
	}
	for _, doc := range c.docs {
		if longterm.HasToken(doc.Text) {
			x.x.SetText(docKey(id, doc.Seq), doc.Text)
			d.seqs = append(d.seqs, doc.Seq)
		}
	}
	d.off, d.last, d.log, d.at = c.end, c.last, c.log, c.at
}

// Search implements driver.Searcher. The first search of a store reads
// every session's search.jsonl (and indexes from its log what a session's
// file lacks); each later one reads the files of the sessions changed
// since, which the feed names, and scores in memory. Each session it
// returns is checked to be the one indexed, not deleted since.
func (s *Store) Search(ctx context.Context, query string, limit int) ([]driver.SearchHit, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.ops.RUnlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	phrases := longterm.Phrases(query)
	if limit <= 0 || len(phrases) == 0 {
		return nil, nil
	}
	hits, err := s.find(ctx, phrases, limit)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	return hits, nil
}

// find is Search under the index's lock. A session found replaced or
// deleted when its hit is checked is read again, and the search run
// again, a few times at most.
func (s *Store) find(ctx context.Context, phrases [][]string, limit int) ([]driver.SearchHit, error) {
	x := &s.search
	x.mu.Lock()
	defer x.mu.Unlock()
	for try := 0; ; try++ {
		if err := s.catchUpSearch(ctx); err != nil {
			return nil, err
		}
		now := s.opts.Now()
		scores := ltdriver.Score([]*ltdriver.Index{x.x}, phrases, func(_ *ltdriver.Index, key string) bool {
			id, _ := splitKey(key)
			return !driver.Expired(s.opts.ExpiresAt(x.sessions[id].at), now)
		})
		var hits []driver.SearchHit
		for _, m := range scores {
			for key, score := range m {
				id, seq := splitKey(key)
				hits = append(hits, driver.SearchHit{ID: id, Seq: seq, Score: score})
			}
		}
		out := make([]driver.SearchHit, 0, min(limit, len(hits)))
		stale := false
		for _, h := range driver.BestPerSession(hits, -1) {
			if len(out) == limit {
				break
			}
			d := x.sessions[h.ID]
			token, file, err := s.probeSearch(h.ID)
			switch {
			case err == nil && token == d.token && file == d.file:
				out = append(out, h)
			case err == nil, errors.Is(err, cairn.ErrNotFound), errors.Is(err, errSearchBad):
				x.touch(h.ID)
				stale = true
			default:
				return nil, err
			}
		}
		if !stale || try == 2 {
			return out, nil
		}
	}
}

// catchUpSearch brings the index up to the files: all of them the first
// time, or when the feed no longer says what changed; otherwise the
// sessions it names and those this store changed.
func (s *Store) catchUpSearch(ctx context.Context) error {
	x := &s.search
	if !x.built {
		return s.readAllSearch(ctx, true)
	}
	ids, rescan, err := s.readFeed(x)
	if err != nil {
		return err
	}
	if rescan {
		return s.readAllSearch(ctx, false)
	}
	ids = append(ids, x.takeTouched()...)
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.refreshSearch(ctx, id, false); err != nil {
			return err
		}
	}
	return nil
}

// readAllSearch reads every session's search.jsonl, from where the index
// left it, and drops the sessions that are gone. With lag set (a store's
// first search), it checks each file against the length of the session's
// log, and has the files that lag caught up.
func (s *Store) readAllSearch(ctx context.Context, lag bool) error {
	x := &s.search
	if x.x == nil {
		x.x, x.sessions, x.tokens = ltdriver.NewIndex(), map[string]*indexed{}, map[string]string{}
	}
	x.takeTouched() // read below
	gen, off, _, err := s.feedMark(true)
	if err != nil {
		return err
	}
	ids, err := s.sessionIDs()
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.refreshSearch(ctx, id, lag); err != nil {
			return err
		}
		seen[id] = true
	}
	for id := range x.sessions {
		if !seen[id] {
			x.drop(id)
		}
	}
	x.feedGen, x.feedOff, x.built = gen, off, true
	return nil
}

// refreshSearch reads session id's search.jsonl from where the index left
// it. A file that does not read, or (with lag set) that does not end at
// the log's length, is first mended from the log (repairSearch). A
// session that is gone, or damaged, is dropped.
func (s *Store) refreshSearch(ctx context.Context, id string, lag bool) error {
	x := &s.search
	c, err := s.readSearch(id, x.sessions[id])
	mend := errors.Is(err, errSearchBad)
	if missing := errors.Is(err, cairn.ErrNotFound); lag && (err == nil || missing) {
		size, serr := s.logSize(id)
		switch {
		case errors.Is(serr, cairn.ErrNotFound):
			err = serr
		case serr != nil:
			return serr
		default:
			mend = missing && size > 0 || err == nil && c.log != size
		}
	}
	if mend {
		err = s.repairSearch(ctx, id)
		if err == nil {
			c, err = s.readSearch(id, x.sessions[id])
		}
	}
	_, damaged := errors.AsType[*driver.DamagedError](err)
	switch {
	case errors.Is(err, cairn.ErrNotFound), errors.Is(err, errSearchBad), damaged:
		x.drop(id)
		return nil
	case err != nil:
		return err
	}
	x.apply(id, c)
	return nil
}

// repairSearch brings session id's search.jsonl up to its log under the
// session's exclusive lock, where no append writes to it: the lines it
// lacks are added, and a file that does not read is written anew.
func (s *Store) repairSearch(ctx context.Context, id string) error {
	return s.withSession(ctx, id, true, func(ss *session, _ time.Time) error {
		_, err := s.readSearch(id, nil)
		bad := errors.Is(err, errSearchBad)
		if err != nil && !bad && !errors.Is(err, cairn.ErrNotFound) {
			return err
		}
		return s.syncSearch(ss, id, bad)
	})
}
