package mongodb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Load implements cairn.Store. It reads the session document, then the
// events from fromSeq up to the document's last_seq in one query, so event
// documents of appends not yet committed (or never to be) are not seen,
// then the document again, so that events of a session deleted and made
// again between the first two reads are not taken for its history.
func (s *Store) Load(ctx context.Context, id string, fromSeq int64) (_ *cairn.Record, err error) {
	defer unavailable(&err)
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	doc, err := s.find(ctx, id)
	if err != nil {
		return nil, err
	}
	from := max(fromSeq, 1)
	rec := &cairn.Record{Info: doc.info(), Events: []cairn.Event{}}
	if from > doc.LastSeq {
		return rec, nil
	}
	cur, err := s.events.Find(ctx,
		bson.D{{Key: "session", Value: id}, {Key: "seq", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lte", Value: doc.LastSeq}}}},
		options.Find().SetSort(bson.D{{Key: "seq", Value: 1}}).SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "seq", Value: 1}, {Key: "event", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	defer func() { _ = cleanup(ctx, cur.Close) }() // killCursors, if it was not read to its end
	rec.Events = make([]cairn.Event, 0, doc.LastSeq-from+1)
	want := from
	for cur.Next(ctx) {
		seq, env, err := rawEvent(cur.Current)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", id, err)
		}
		// env aliases the cursor's batch, which the next batch replaces:
		// the event keeps a copy.
		e, ok := driver.ParseEnvelope(env)
		if ok {
			e.Data = bytes.Clone(e.Data)
		} else {
			// From zero, so that json.Unmarshal copies the data rather
			// than decode it into what ParseEnvelope left in e.Data,
			// which aliases the batch.
			e = cairn.Event{}
			if err := json.Unmarshal(env, &e); err != nil {
				return nil, fmt.Errorf("load %s: %w", id, &driver.DamagedError{Session: id,
					Where: fmt.Sprintf("%s collection, seq %d", s.events.Name(), seq),
					Msg:   "the stored envelope does not decode: " + err.Error()})
			}
		}
		if seq != want || e.Seq != want {
			break // a gap: checked below
		}
		rec.Events = append(rec.Events, e)
		want++
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	// The events were read after the session document. If the session was
	// deleted in between (events are removed only after their session
	// document is marked erased or is gone) and perhaps created again,
	// they may be another incarnation's: none, some, or those of an append
	// the new session has not committed. A second read of the document
	// tells: the same incarnation, not gone back, and the events read are
	// the committed history of the first read.
	again, err := s.find(ctx, id)
	if err != nil {
		return nil, err
	}
	if again.Incarnation != doc.Incarnation || again.LastSeq < doc.LastSeq {
		return nil, cairn.ErrNotFound // the answer of a moment between the delete and the create
	}
	if want != doc.LastSeq+1 {
		return nil, fmt.Errorf("load %s: %w", id, &driver.DamagedError{Session: id,
			Where: fmt.Sprintf("%s collection, seq %d", s.events.Name(), want),
			Msg:   fmt.Sprintf("the event of seq %d is missing, or is not the event of its seq (the session's last seq is %d)", want, doc.LastSeq)})
	}
	return rec, nil
}

// rawEvent reads the seq and the envelope of an event document without
// decoding the rest of it.
func rawEvent(doc bson.Raw) (int64, []byte, error) {
	seq, ok := doc.Lookup("seq").AsInt64OK()
	if !ok {
		return 0, nil, errors.New("an event document without an integer seq")
	}
	_, env, ok := doc.Lookup("event").BinaryOK()
	if !ok {
		return 0, nil, fmt.Errorf("event document of seq %d without its binary envelope", seq)
	}
	return seq, env, nil
}

// find returns the live session document of id, or ErrNotFound.
func (s *Store) find(ctx context.Context, id string) (*sessionDoc, error) {
	var doc sessionDoc
	err := s.sessions.FindOne(ctx, liveFilter(id, s.now())).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, cairn.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	return &doc, nil
}

// List implements cairn.Store. Filters, order and cursor are all part of
// the query. On MongoDB an index serves each: (updated_ns desc, _id desc)
// the order, (status, updated_ns desc, _id desc) a status filter, the
// multikey (labels, updated_ns desc, _id desc) a label filter, and the
// _id index a prefix (a range of IDs). One status and the first label are
// plain equalities at the top of the filter, the form FerretDB hands to
// its backend, which then returns only the matching documents.
func (s *Store) List(ctx context.Context, opts cairn.ListOptions) (_ *cairn.ListPage, err error) {
	defer unavailable(&err)
	if err := s.guard.Check(); err != nil {
		return nil, err
	}
	filter := live(s.now())
	if opts.Prefix != "" {
		filter = append(filter, bson.E{Key: "_id", Value: prefixRange(opts.Prefix)})
	}
	switch len(opts.Status) {
	case 0:
	case 1:
		filter = append(filter, bson.E{Key: "status", Value: string(opts.Status[0])})
	default:
		st := bson.A{}
		for _, x := range opts.Status {
			st = append(st, string(x))
		}
		filter = append(filter, bson.E{Key: "status", Value: bson.D{{Key: "$in", Value: st}}})
	}
	var and bson.A
	for i, pair := range encodeLabels(opts.Labels) {
		if i == 0 {
			filter = append(filter, bson.E{Key: "labels", Value: pair})
		} else {
			and = append(and, bson.D{{Key: "labels", Value: pair}})
		}
	}
	updated := bson.D{}
	if !opts.UpdatedAfter.IsZero() {
		updated = append(updated, bson.E{Key: "$gt", Value: opts.UpdatedAfter.UnixNano()})
	}
	if !opts.UpdatedBefore.IsZero() {
		updated = append(updated, bson.E{Key: "$lt", Value: opts.UpdatedBefore.UnixNano()})
	}
	if len(updated) > 0 {
		filter = append(filter, bson.E{Key: "updated_ns", Value: updated})
	}
	if opts.Cursor != "" {
		c, err := driver.ParseCursor(opts.Cursor)
		if err != nil {
			return nil, err
		}
		ns := c.UpdatedAt.UnixNano()
		and = append(and, bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: "updated_ns", Value: bson.D{{Key: "$lt", Value: ns}}}},
			bson.D{{Key: "updated_ns", Value: ns}, {Key: "_id", Value: bson.D{{Key: "$lt", Value: c.ID}}}},
		}}})
	}
	if len(and) > 0 {
		filter = append(filter, bson.E{Key: "$and", Value: and})
	}
	n := driver.PageSize(opts)
	cur, err := s.sessions.Find(ctx, filter, options.Find().
		SetSort(bson.D{{Key: "updated_ns", Value: -1}, {Key: "_id", Value: -1}}).
		SetLimit(int64(n)+1))
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	var docs []sessionDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	page := &cairn.ListPage{Sessions: make([]cairn.SessionInfo, 0, min(len(docs), n))}
	for i := range docs[:min(len(docs), n)] {
		page.Sessions = append(page.Sessions, docs[i].info())
	}
	if len(docs) > n {
		last := page.Sessions[n-1]
		page.Next = driver.Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}.Encode()
	}
	return page, nil
}

// prefixRange matches the IDs that start with prefix: those from prefix up
// to, not including, prefix followed by a character above every character
// an ID may hold (IDs are ASCII letters, digits, _ and -, and strings
// compare by their bytes).
func prefixRange(prefix string) bson.D {
	return bson.D{{Key: "$gte", Value: prefix}, {Key: "$lt", Value: prefix + "\x7f"}}
}

// Stat implements cairn.Store: Load's info, with no event read.
func (s *Store) Stat(ctx context.Context, id string) (*cairn.SessionInfo, error) {
	rec, err := s.Load(ctx, id, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	return &rec.Info, nil
}
