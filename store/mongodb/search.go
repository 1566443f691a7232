package mongodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

var _ driver.Searcher = (*Store)(nil)

// match is an event document that holds a phrase of a search.
type match struct {
	session string
	seq     int64
	written int64   // written_at, ms
	length  int64   // tlen
	freq    []int32 // how many times it holds each phrase
}

// Search implements driver.Searcher. Each phrase of the query is one query
// of the event documents by the hash of its longest token (on MongoDB the
// multikey index on toks serves it), which returns each one's seq,
// length and count of the token, and for a phrase of several tokens its
// envelope, whose text is counted again. A read of the sessions found
// (searchHeads) then keeps the committed events (at or below the last seq
// of the session's incarnation, as Load reads them) of live sessions, and
// BM25 is scored as SQLite's FTS5 scores it, over the namespace's
// statistics, after the store has sent its part of them.
func (s *Store) Search(ctx context.Context, query string, limit int) (_ []driver.SearchHit, err error) {
	defer unavailable(&err)
	phrases, err := s.guard.Search(query, limit)
	if err != nil || len(phrases) == 0 {
		return nil, err
	}
	var found []*match
	byEvent := map[string]*match{}
	for p := range phrases {
		if found, err = s.matchPhrase(ctx, phrases, p, found, byEvent); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	heads, err := s.searchHeads(ctx, found)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	// The committed events, of sessions live or expired (the statistics
	// count both until Sweep), and which of them are live.
	now := s.now().UnixNano()
	committed := found[:0]
	live := map[*match]bool{}
	for _, m := range found {
		h, ok := heads[m.session]
		if !ok || m.seq > h.LastSeq || m.written < h.Born/int64(time.Millisecond) {
			// Not committed: an append's that failed or is on its way,
			// or, read before a Delete and Create that raced the
			// search, the session's former incarnation's (a committed
			// event was written after its incarnation was born).
			continue
		}
		committed = append(committed, m)
		live[m] = h.ExpiresNs > now
	}
	if err := s.sendStats(ctx); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	st, err := s.stats(ctx)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	scores := bm25(committed, len(phrases), st)
	var hits []driver.SearchHit
	for i, m := range committed {
		if live[m] && scores[i] > 0 {
			hits = append(hits, driver.SearchHit{ID: m.session, Seq: m.seq, Score: scores[i]})
		}
	}
	if len(hits) == 0 {
		return nil, nil
	}
	return driver.BestPerSession(hits, limit), nil
}

// matchPhrase adds to found the event documents that hold phrase p of
// phrases, each event once (byEvent), with the phrase's count.
func (s *Store) matchPhrase(ctx context.Context, phrases [][]string, p int, found []*match, byEvent map[string]*match) ([]*match, error) {
	ph := phrases[p]
	key := ph[0]
	for _, t := range ph[1:] {
		if len(t) > len(key) {
			key = t // likely the rarest
		}
	}
	h := TokenHash(key)
	proj := bson.D{{Key: "_id", Value: 0}, {Key: "session", Value: 1}, {Key: "seq", Value: 1},
		{Key: "written_at", Value: 1}, {Key: "tlen", Value: 1}, {Key: "tf." + h, Value: 1}}
	if len(ph) > 1 {
		proj = append(proj, bson.E{Key: "event", Value: 1})
	}
	cur, err := s.events.Find(ctx, bson.D{{Key: "toks", Value: h}}, options.Find().SetProjection(proj))
	if err != nil {
		return found, err
	}
	defer func() { _ = cleanup(ctx, cur.Close) }()
	for cur.Next(ctx) {
		raw := cur.Current
		id, ok1 := raw.Lookup("session").StringValueOK()
		seq, ok2 := raw.Lookup("seq").AsInt64OK()
		written, ok3 := raw.Lookup("written_at").DateTimeOK()
		length, ok4 := raw.Lookup("tlen").AsInt64OK()
		if !ok1 || !ok2 || !ok3 || !ok4 {
			continue // not an event document of this version's form
		}
		f := int64(1)
		if n, ok := raw.Lookup("tf", h).AsInt64OK(); ok {
			f = n
		}
		if len(ph) > 1 {
			_, env, ok := raw.Lookup("event").BinaryOK()
			if !ok {
				continue
			}
			e, ok := parseEvent(env)
			if !ok {
				continue
			}
			f = int64(ltdriver.Count(longterm.Tokens(e.SearchText()), ph))
		}
		if f == 0 {
			continue
		}
		k := id + "\x00" + strconv.FormatInt(seq, 10)
		m := byEvent[k]
		if m == nil {
			m = &match{session: id, seq: seq, written: written, length: length, freq: make([]int32, len(phrases))}
			byEvent[k] = m
			found = append(found, m)
		}
		m.freq[p] = int32(f)
	}
	return found, cur.Err()
}

// searchHeads reads the session documents of the matches' sessions that
// are committed (last_seq >= 0): by _id, 500 at a time. FerretDB 1.x
// reads the whole collection for $in, and a document by _id alone through
// its index: there a few sessions are read one by one.
func (s *Store) searchHeads(ctx context.Context, found []*match) (map[string]sessionDoc, error) {
	seen := map[string]bool{}
	var ids []string
	for _, m := range found {
		if !seen[m.session] {
			seen[m.session] = true
			ids = append(ids, m.session)
		}
	}
	heads := make(map[string]sessionDoc, len(ids))
	proj := bson.D{{Key: "last_seq", Value: 1}, {Key: "expires_ns", Value: 1}, {Key: "born", Value: 1}}
	if s.ferret1 && len(ids) <= oneByOne {
		for _, id := range ids {
			var d sessionDoc
			err := s.sessions.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, options.FindOne().SetProjection(proj)).Decode(&d)
			switch {
			case errors.Is(err, mongo.ErrNoDocuments):
			case err != nil:
				return nil, err
			case d.LastSeq >= 0:
				heads[id] = d
			}
		}
		return heads, nil
	}
	const chunk = 500
	for i := 0; i < len(ids); i += chunk {
		in := bson.A{}
		for _, id := range ids[i:min(i+chunk, len(ids))] {
			in = append(in, id)
		}
		cur, err := s.sessions.Find(ctx,
			bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}, {Key: "last_seq", Value: bson.D{{Key: "$gte", Value: 0}}}},
			options.Find().SetProjection(proj))
		if err != nil {
			return nil, err
		}
		var docs []sessionDoc
		if err := cur.All(ctx, &docs); err != nil {
			return nil, err
		}
		for _, d := range docs {
			heads[d.ID] = d
		}
	}
	return heads, nil
}

// oneByOne is how many sessions a search reads one by one on FerretDB
// 1.x, at about a millisecond each, rather than read the whole collection.
const oneByOne = 64

// bm25 returns the score of each match over phrases phrases, with FTS5's
// formula: the statistics give the number of documents and their average
// length (or, should they lag behind, the matches), and each phrase's
// number of documents is its matches'.
func bm25(found []*match, phrases int, st searchStats) []float64 {
	n := float64(max(st.N, int64(len(found)), 1))
	avg := float64(st.Len) / n
	if st.Len <= 0 || st.N < int64(len(found)) {
		var total int64
		for _, m := range found {
			total += m.length
		}
		avg = float64(max(st.Len, total)) / n
	}
	avg = max(avg, 1e-9)
	scores := make([]float64, len(found))
	for p := range phrases {
		df := 0
		for _, m := range found {
			if m.freq[p] > 0 {
				df++
			}
		}
		if df == 0 {
			continue
		}
		idf := ltdriver.IDF(n, float64(df))
		for i, m := range found {
			if m.freq[p] == 0 {
				continue
			}
			f, dl := float64(m.freq[p]), float64(m.length)
			scores[i] += ltdriver.BM25(idf, f, dl, avg)
		}
	}
	return scores
}
