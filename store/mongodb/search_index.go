package mongodb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm"
)

// The text index of the session stores (driver.Searcher) is kept in the
// event documents themselves (eventDoc's toks, tf and tlen), so that it
// is written by the insert that writes the events, committed by the
// commit that commits them, and removed with them: nothing outside the
// append's own documents can hold an event's words. An entry of an
// uncommitted or failed append lies above its session's last seq, where
// Search, like Load, reads nothing. NS.search holds what is not per
// event: the BM25 statistics and the mark that older events have been
// indexed.

// maxDocBytes is MongoDB's limit on a document.
const maxDocBytes = 16 << 20

// postings returns the entry in the text index of event e, whose envelope
// is size bytes: the hashes (TokenHash) of its search text's distinct
// tokens in the order they first occur, the counts of those that occur
// more than once, and the text's length in tokens. When the entry would
// not fit in the document beside the envelope (only events of several
// MiB, far above the default Limits.MaxEventBytes, can come near), it
// keeps the tokens that fit, the first ones.
func postings(e cairn.Event, size int) (toks []string, tf map[string]int32, n int64) {
	words := longterm.Tokens(e.SearchText())
	if len(words) == 0 {
		return nil, nil, 0
	}
	counts := make(map[string]int32, len(words))
	var order []string
	for _, w := range words {
		if counts[w] == 0 {
			order = append(order, w)
		}
		counts[w]++
	}
	budget := maxDocBytes - 4<<10 - size // room for the document's other fields
	toks = make([]string, 0, len(order))
	for i, w := range order {
		// BSON: an array element of a 16-character string; a field of
		// an int32.
		cost := 23 + len(strconv.Itoa(i))
		if counts[w] > 1 {
			cost += 22
		}
		if budget -= cost; budget < 0 {
			break
		}
		h := TokenHash(w)
		toks = append(toks, h)
		if c := counts[w]; c > 1 {
			if tf == nil {
				tf = map[string]int32{}
			}
			tf[h] = c
		}
	}
	return toks, tf, int64(len(words))
}

// indexed returns how many of docs are documents of the index (their
// text has a token) and their total length, as the statistics count them.
func indexed(docs []eventDoc) (n, length int64) {
	for i := range docs {
		if docs[i].TLen > 0 {
			n++
			length += docs[i].TLen
		}
	}
	return n, length
}

// statStripes is how many documents of NS.search share the statistics:
// each store adds to one of them, and a search sums them. FerretDB applies
// an $inc as a read and a later write of the document, so two at once on
// one document can lose one; spread over stripes, fewer do.
const statStripes = 16

// searchStats is the statistics BM25 reads: how many documents the index
// holds (events with text) and their total length in tokens.
type searchStats struct {
	N   int64 `bson:"n"`
	Len int64 `bson:"len"`
}

// statsSendAfter is how long a store keeps what it adds to the statistics
// before it sends it, so that one update carries the appends of that
// while; a search of the store sends them first.
const statsSendAfter = 100 * time.Millisecond

// pendingStats is what a store has added to the statistics and not yet
// sent.
type pendingStats struct {
	mu        sync.Mutex
	d         searchStats
	scheduled bool       // a send is scheduled
	sending   sync.Mutex // held by the send in progress
}

// addStats adds n documents of the given total length to the statistics:
// to what the store sends within statsSendAfter (sendStats).
func (s *Store) addStats(n, length int64) {
	if n == 0 && length == 0 {
		return
	}
	p := &s.pending
	p.mu.Lock()
	defer p.mu.Unlock()
	p.d.N += n
	p.d.Len += length
	s.scheduleStats(statsSendAfter)
}

// scheduleStats sends the pending statistics after d, unless a send is
// scheduled already, with p.mu held.
func (s *Store) scheduleStats(d time.Duration) {
	if s.pending.scheduled || s.guard.Closed() {
		return
	}
	s.pending.scheduled = true
	time.AfterFunc(d, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.sendStats(ctx)
	})
}

// sendStats adds what the store has added to the statistics since its
// last send to its stripe of NS.search, in one update. What a send that
// fails carried is sent again a second later. When it returns, every add
// made before it was called has been sent, or has failed to be.
func (s *Store) sendStats(ctx context.Context) error {
	p := &s.pending
	p.sending.Lock()
	defer p.sending.Unlock()
	p.mu.Lock()
	d := p.d
	p.d, p.scheduled = searchStats{}, false
	p.mu.Unlock()
	if d.N == 0 && d.Len == 0 {
		return nil
	}
	var err error
	for range 3 { // again on a duplicate: two first upserts raced, and the stripe exists now
		_, err = s.search.UpdateOne(ctx, bson.D{{Key: "_id", Value: s.stripe}},
			bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: d.N}, {Key: "len", Value: d.Len}}}},
			options.UpdateOne().SetUpsert(true))
		if !mongo.IsDuplicateKeyError(err) {
			break
		}
	}
	if err != nil {
		p.mu.Lock()
		p.d.N += d.N
		p.d.Len += d.Len
		s.scheduleStats(time.Second)
		p.mu.Unlock()
	}
	return err
}

// uncount takes the documents of the events collection that filter
// matches and that the index holds out of the statistics, before they are
// removed. It reads their lengths and sums them here (FerretDB's $sum of
// int64 fields gives 0). It is best effort: an error leaves the
// statistics as they are.
func (s *Store) uncount(ctx context.Context, filter bson.D) {
	f := append(filter[:len(filter):len(filter)], bson.E{Key: "tlen", Value: bson.D{{Key: "$gt", Value: 0}}})
	cur, err := s.events.Find(ctx, f, options.Find().SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "tlen", Value: 1}}))
	if err != nil {
		return
	}
	defer func() { _ = cur.Close(ctx) }()
	var n, length int64
	for cur.Next(ctx) {
		if l, ok := cur.Current.Lookup("tlen").AsInt64OK(); ok {
			n, length = n+1, length+l
		}
	}
	if cur.Err() == nil {
		s.addStats(-n, -length)
	}
}

// stats returns the statistics, the sum of their stripes.
func (s *Store) stats(ctx context.Context) (searchStats, error) {
	ids := bson.A{}
	for i := range statStripes {
		ids = append(ids, "stats/"+strconv.Itoa(i))
	}
	cur, err := s.search.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return searchStats{}, err
	}
	var stripes []searchStats
	if err := cur.All(ctx, &stripes); err != nil {
		return searchStats{}, err
	}
	var st searchStats
	for _, x := range stripes {
		st.N += x.N
		st.Len += x.Len
	}
	return st, nil
}

// indexTokens creates the multikey index on the event documents' toks, on
// a server that can hold it. FerretDB 1.x cannot: on PostgreSQL it makes
// an index of the whole array, whose entries have a limit of 8 KiB, so an
// event of a few hundred distinct words could not be inserted; and it
// would not use the index anyway (it hands PostgreSQL a containment test,
// which a B-tree cannot serve). There a search reads the collection.
func (s *Store) indexTokens(ctx context.Context) error {
	var info struct {
		Ferret string `bson:"ferretdbVersion"`
	}
	if err := s.events.Database().RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return fmt.Errorf("build info: %w", err)
	}
	if info.Ferret != "" {
		major, _, _ := strings.Cut(strings.TrimPrefix(info.Ferret, "v"), ".")
		if n, err := strconv.Atoi(major); err != nil || n < 2 {
			s.ferret1 = true // its embedded builds say "unknown"
			return nil
		}
	}
	s.tokIndex = true
	_, err := s.events.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "toks", Value: 1}},
		Options: options.Index().SetName("toks").SetSparse(true),
	})
	if err != nil {
		return fmt.Errorf("create index on %s: %w", s.events.Name(), err)
	}
	return nil
}

// TokenIndex reports whether the event documents' tokens have an index on
// the server (all but FerretDB 1.x): without it a search reads every event
// document of the namespace.
func (s *Store) TokenIndex() bool { return s.tokIndex }

// indexedMark is the _id of the document of NS.search that says every
// event document of the namespace has its entry in the index.
const indexedMark = "indexed"

// reindexBatch is how many event documents indexOld reads and updates at
// a time.
const reindexBatch = 500

// indexOld gives the event documents written before the text index (those
// without tlen) their entries, once per namespace: when NS.search has no
// mark that it was done, a store that claims the work (one at a time; a
// claim is taken over once StaleAfter old) reads them in _id order, a
// batch at a time, sets their entries (one update command per batch; on
// FerretDB 1.x, which holds a connection for each update of a command
// until the command ends, one per document), adds them to the statistics,
// and sets the mark. Another store opened meanwhile does not wait: until
// the mark is set its searches may miss sessions of the older events.
func (s *Store) indexOld(ctx context.Context) error {
	err := s.search.FindOne(ctx, bson.D{{Key: "_id", Value: indexedMark}}).Err()
	if err == nil {
		return nil
	}
	if !errors.Is(err, mongo.ErrNoDocuments) {
		return err
	}
	const cid = "claim/search-index" // no session's claim: those hold two slashes
	if won, err := s.claim(ctx, cid); err != nil || !won {
		return err
	}
	defer func() {
		_ = cleanup(ctx, func(ctx context.Context) error {
			_, err := s.sessions.DeleteOne(ctx, bson.D{{Key: "_id", Value: cid}})
			return err
		})
	}()
	// Events only: lease documents (seq < 0) are updated by their
	// holders, and FerretDB's update of a document racing another can
	// undo it; holds are no events. Nothing updates an event document.
	filter := bson.D{{Key: "tlen", Value: bson.D{{Key: "$exists", Value: false}}},
		{Key: "seq", Value: bson.D{{Key: "$gt", Value: 0}}}, {Key: "hold", Value: bson.D{{Key: "$ne", Value: true}}}}
	var after any
	for {
		f := filter
		if after != nil {
			f = append(filter[:len(filter):len(filter)], bson.E{Key: "_id", Value: bson.D{{Key: "$gt", Value: after}}})
		}
		cur, err := s.events.Find(ctx, f, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(reindexBatch).
			SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "session", Value: 1}, {Key: "event", Value: 1}}))
		if err != nil {
			return err
		}
		var docs []struct {
			ID      bson.RawValue `bson:"_id"`
			Session string        `bson:"session"`
			Event   []byte        `bson:"event"`
		}
		if err := cur.All(ctx, &docs); err != nil {
			return err
		}
		if len(docs) == 0 {
			break
		}
		models := make([]mongo.WriteModel, 0, len(docs))
		var n, length int64
		for _, d := range docs {
			set := bson.D{{Key: "tlen", Value: int64(0)}}
			if e, ok := parseEvent(d.Event); ok {
				toks, tf, tl := postings(e, len(d.Event))
				set = bson.D{{Key: "tlen", Value: tl}}
				if len(toks) > 0 {
					set = append(set, bson.E{Key: "toks", Value: toks})
					n, length = n+1, length+tl
				}
				if len(tf) > 0 {
					set = append(set, bson.E{Key: "tf", Value: tf})
				}
			}
			models = append(models, mongo.NewUpdateOneModel().
				SetFilter(bson.D{{Key: "_id", Value: d.ID}, filter[0]}).
				SetUpdate(bson.D{{Key: "$set", Value: set}}))
		}
		if err := s.updateEach(ctx, models); err != nil {
			return err
		}
		s.addStats(n, length)
		after = docs[len(docs)-1].ID
		// Still at it: the claim is not stale.
		if _, err := s.sessions.UpdateOne(ctx, bson.D{{Key: "_id", Value: cid}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "busy_since", Value: bson.NewDateTimeFromTime(time.Now())}}}}); err != nil {
			return err
		}
		if len(docs) < reindexBatch {
			break
		}
	}
	_, err = s.search.InsertOne(ctx, bson.D{{Key: "_id", Value: indexedMark}, {Key: "at", Value: bson.NewDateTimeFromTime(time.Now())}})
	if mongo.IsDuplicateKeyError(err) {
		err = nil
	}
	return err
}

// updateEach runs the updates of models: in one command, or one at a time
// on FerretDB 1.x.
func (s *Store) updateEach(ctx context.Context, models []mongo.WriteModel) error {
	if !s.ferret1 {
		_, err := s.events.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
		return err
	}
	for _, m := range models {
		u := m.(*mongo.UpdateOneModel)
		if _, err := s.events.UpdateOne(ctx, u.Filter, u.Update); err != nil {
			return err
		}
	}
	return nil
}

// parseEvent decodes a stored envelope, as Load does; false when it does
// not decode.
func parseEvent(env []byte) (cairn.Event, bool) {
	if e, ok := driver.ParseEnvelope(env); ok {
		return e, true
	}
	var e cairn.Event
	return e, json.Unmarshal(env, &e) == nil
}
