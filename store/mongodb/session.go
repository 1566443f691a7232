package mongodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
)

// Create implements cairn.Store. It takes three round trips when the ID is
// free: insert the new document in the creating state, remove documents
// an earlier session of the ID left behind, and commit last_seq 0. While
// the document is in the creating state no Append can commit and no
// reader sees it.
//
// The ID may be held by a document that no reader sees: an expired
// session, or one being erased (a Delete that has not finished, or died),
// which Create removes at once (see removeDoc), or another Create in
// progress, which it waits for (at most CommitWait, never past ctx):
// ErrExists once that one commits, on with its own once that one fails.
// Should the other neither commit nor fail in time, the error wraps
// cairn.ErrUnavailable, since ErrExists would name a session that no
// reader can see and that may never be.
func (s *Store) Create(ctx context.Context, meta cairn.SessionMeta) (err error) {
	defer unavailable(&err)
	if err := s.guard.Session(meta.ID); err != nil {
		return err
	}
	id := meta.ID
	w := newWaiter()
	var floor int64  // the fence must pass an erasure taken over (see erase)
	var purged int64 // the last seq of an expired session removed
	for {
		cur, err := s.holder(ctx, id)
		if err != nil {
			return fmt.Errorf("create %s: %w", id, err)
		}
		now := s.now().UnixNano()
		stale := time.Now().Add(-StaleAfter)
		wait := false
		switch {
		case cur == nil:
			created, err := s.createOnce(ctx, meta, floor, purged)
			if err != nil || created {
				return err
			}
			continue // taken meanwhile: look again
		case cur.LastSeq >= 0 && cur.ExpiresNs > now:
			return cairn.ErrExists
		case cur.LastSeq >= 0:
			// Expired: invisible to every reader, and its ID free.
			removed, err := s.removeDoc(ctx, id, cur.Incarnation, bson.D{
				{Key: "last_seq", Value: bson.D{{Key: "$gte", Value: 0}}}, {Key: "expires_ns", Value: bson.D{{Key: "$lte", Value: now}}}})
			if err != nil {
				return fmt.Errorf("create %s: purge expired: %w", id, err)
			}
			if removed {
				purged = cur.LastSeq
			}
			wait = !removed
		case cur.LastSeq == seqErasing || cur.BusySince == nil || cur.BusySince.Time().Before(stale):
			// A Delete marked the session erased and has not removed it
			// (yet, or ever), or a Create died in the middle: the session
			// is gone for everyone, so take its place. Whatever that
			// Delete still removes was written before its mark, and the
			// new session's fence passes the mark.
			if cur.BusySince != nil {
				floor = max(floor, cur.BusySince.Time().UnixNano())
			}
			removed, err := s.removeDoc(ctx, id, cur.Incarnation, bson.D{{Key: "last_seq", Value: cur.LastSeq}})
			if err != nil {
				return fmt.Errorf("create %s: take over an unfinished document: %w", id, err)
			}
			wait = !removed
		default:
			wait = true // another Create is in progress: wait for it to commit or fail
		}
		if !wait {
			continue
		}
		if err := w.wait(ctx); err != nil {
			return fmt.Errorf("create %s: %w: another call on the ID has not finished: %w", id, cairn.ErrUnavailable, err)
		}
	}
}

// createOnce makes the session meta.ID if its ID is free, and reports
// whether it did; false with no error: a document took the ID first, or
// another remover removed the new one before its commit (see removeDoc).
//
// The new document's fence is a millisecond past both the creator's clock
// and floor, so that the session's commits all come from appends that
// began after it (a commit requires fence < start): their event documents
// are written after every cut that an earlier session's erasure (floor) or
// this Create's own cleanup takes, and no delayed removal of those can
// reach them.
//
// The events up to purged, of an expired session that Create removed (no
// erasure took them out of the search statistics), are taken out of them
// as they are removed.
func (s *Store) createOnce(ctx context.Context, meta cairn.SessionMeta, floor, purged int64) (bool, error) {
	id := meta.ID
	now := s.now()
	wall := time.Now()
	created := meta.CreatedAt
	if created.IsZero() {
		created = now
	}
	expNs, expAt := s.expiry(now)
	busy := bson.NewDateTimeFromTime(wall)
	fence := max(wall.UnixNano(), floor) + int64(time.Millisecond)
	inc := newToken()
	doc := sessionDoc{
		ID:          id,
		LastSeq:     seqCreating,
		CreatedNs:   created.UnixNano(),
		UpdatedNs:   now.UnixNano(),
		ExpiresNs:   expNs,
		CreatedAt:   bson.NewDateTimeFromTime(created),
		UpdatedAt:   bson.NewDateTimeFromTime(now),
		ExpiresAt:   expAt,
		Status:      string(cairn.StatusNew),
		Labels:      encodeLabels(meta.Labels),
		Fence:       fence,
		Born:        wall.UnixNano(),
		BusySince:   &busy,
		Incarnation: inc,
	}
	if _, err := s.sessions.InsertOne(ctx, doc); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return false, nil
		}
		return false, fmt.Errorf("create %s: %w", id, err)
	}
	mine := bson.D{{Key: "_id", Value: id}, {Key: "last_seq", Value: seqCreating}, {Key: "inc", Value: inc}}
	// From here on the document is ours: undo it if we cannot finish.
	fail := func(err error) error {
		_ = cleanup(ctx, func(ctx context.Context) error {
			_, err := s.removeDoc(ctx, id, inc, bson.D{{Key: "last_seq", Value: seqCreating}})
			return err
		})
		return fmt.Errorf("create %s: %w", id, err)
	}
	// Documents an earlier session of the ID left: all were written
	// before the fence (its events, its leases, strays of its appends).
	old := bson.D{{Key: "session", Value: id}, {Key: "$or", Value: writtenBefore(fencedBefore(fence))}}
	if purged > 0 {
		s.uncount(ctx, append(old[:len(old):len(old)], bson.E{Key: "seq", Value: bson.D{{Key: "$lte", Value: purged}}}))
	}
	if _, err := s.events.DeleteMany(ctx, old); err != nil {
		return false, fail(fmt.Errorf("remove old events: %w", err))
	}
	if err := s.eraseSnapshots(ctx, id, fencedBefore(fence)); err != nil {
		return false, fail(fmt.Errorf("remove old snapshots: %w", err))
	}
	res, err := s.sessions.UpdateOne(ctx, mine,
		bson.D{
			{Key: "$set", Value: bson.D{{Key: "last_seq", Value: 0}}},
			{Key: "$unset", Value: bson.D{{Key: "busy_since", Value: ""}}},
		})
	if err != nil {
		return false, fail(err)
	}
	return res.MatchedCount == 1, nil
}

// holder returns the document that holds the ID id, whatever its state,
// or nil.
func (s *Store) holder(ctx context.Context, id string) (*sessionDoc, error) {
	var doc sessionDoc
	err := s.sessions.FindOne(ctx, bson.D{{Key: "_id", Value: id}},
		options.FindOne().SetProjection(bson.D{{Key: "last_seq", Value: 1}, {Key: "expires_ns", Value: 1}, {Key: "busy_since", Value: 1}, {Key: "inc", Value: 1}})).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &doc, nil
}

// removeDoc removes the session document of id, of the incarnation inc
// ("" for a document of an earlier version, which has none), when it also
// matches cond, and reports whether this call did (or found it gone).
//
// On FerretDB a removal is a query, then a deletion by _id: a document put
// in place of the one the query found, in between, would be deleted
// instead, a new session lost. So every removal of a session document
// first takes a claim on it, a document of the sessions collection whose
// _id names the ID and its incarnation: of two removers, the one that
// takes the claim removes the document; the other reports false, and a
// Create waits for the document to be gone before it puts its own there.
// A claim older than StaleAfter (its remover died) is taken over. The
// claim is removed after the document.
func (s *Store) removeDoc(ctx context.Context, id, inc string, cond bson.D) (bool, error) {
	cid := "claim/" + id + "/" + inc
	if won, err := s.claim(ctx, cid); err != nil || !won {
		return false, err // another remover holds the claim
	}
	match := bson.E{Key: "inc", Value: inc}
	if inc == "" {
		match = bson.E{Key: "inc", Value: bson.D{{Key: "$exists", Value: false}}}
	}
	_, err := s.sessions.DeleteOne(ctx, append(bson.D{{Key: "_id", Value: id}, match}, cond...))
	if err == nil {
		_, err = s.sessions.DeleteOne(ctx, bson.D{{Key: "_id", Value: cid}})
	}
	return err == nil, err
}

// claim takes the claim cid, a document of the sessions collection, and
// reports whether it did: false when another caller holds it. A claim
// older than StaleAfter (its taker died) is taken over.
func (s *Store) claim(ctx context.Context, cid string) (bool, error) {
	now := time.Now()
	for range 2 {
		_, err := s.sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: cid}, {Key: "claim", Value: true}, {Key: "busy_since", Value: bson.NewDateTimeFromTime(now)}})
		if err == nil {
			return true, nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return false, err
		}
		res, err := s.sessions.DeleteOne(ctx, bson.D{{Key: "_id", Value: cid},
			{Key: "busy_since", Value: bson.D{{Key: "$lt", Value: bson.NewDateTimeFromTime(now.Add(-StaleAfter))}}}})
		if err != nil || res.DeletedCount == 0 {
			return false, err
		}
	}
	return false, nil
}

// writtenBefore matches the documents of the events collection written
// before cut, and those that carry no time (lease documents of earlier
// versions), as the value of an $or.
func writtenBefore(cut bson.DateTime) bson.A {
	return bson.A{
		bson.D{{Key: "written_at", Value: bson.D{{Key: "$lt", Value: cut}}}},
		bson.D{{Key: "written_at", Value: bson.D{{Key: "$exists", Value: false}}}},
	}
}

// Delete implements cairn.Store. The session document is first marked as
// being erased (from then on every Append fails its commit and readers see
// nothing), then its event documents are removed, then the document.
func (s *Store) Delete(ctx context.Context, id string) (err error) {
	defer unavailable(&err)
	if err := s.guard.Session(id); err != nil {
		return err
	}
	ok, err := s.erase(ctx, id, live(s.now()))
	if err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if !ok {
		return cairn.ErrNotFound
	}
	return nil
}

// erase removes session id, whose document must also match cond, with all
// its events and snapshots, and reports whether it matched.
//
// While the session lives, the mark is written under a hold of the
// session's next position (see hold), so that no commit races it.
//
// The mark (last_seq erasing, busy_since the eraser's real clock, to the
// millisecond) is the erasure's cut: it removes the documents written up
// to the mark, and then the document so marked, nothing else. A Create may
// take the marked document over before the erasure ends (or if it never
// does), and the new session's documents are all written after the mark
// (see createOnce), so an erasure that is slow, or whose requests reach
// the server late, never removes them. Documents of the old session
// written after the mark (an append racing the Delete, which cannot
// commit) are left to the next Create of the ID or to Sweep.
func (s *Store) erase(ctx context.Context, id string, cond bson.D) (bool, error) {
	h, release, err := s.hold(ctx, id, cond, nil)
	if errors.Is(err, cairn.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	mark := bson.NewDateTimeFromTime(time.Now())
	res, err := s.sessions.UpdateOne(ctx, h.at(append(bson.D{{Key: "_id", Value: id}}, cond...)),
		bson.D{{Key: "$set", Value: bson.D{
			{Key: "last_seq", Value: seqErasing},
			{Key: "busy_since", Value: mark},
		}}})
	defer release(err)
	if err != nil {
		return false, err
	}
	if res.MatchedCount == 0 {
		return false, nil
	}
	// Past this point the session is gone for readers and writers; if we
	// fail here, Create or Sweep finishes the job.
	return true, cleanup(ctx, func(ctx context.Context) error {
		if h.LastSeq > 0 {
			s.uncount(ctx, bson.D{{Key: "session", Value: id}, {Key: "seq", Value: bson.D{{Key: "$lte", Value: h.LastSeq}}}})
		}
		if _, err := s.events.DeleteMany(ctx, bson.D{{Key: "session", Value: id}, {Key: "$or", Value: writtenBefore(mark + 1)}}); err != nil {
			return err
		}
		if err := s.eraseSnapshots(ctx, id, mark+1); err != nil {
			return err
		}
		cur, err := s.holder(ctx, id)
		if err != nil || cur == nil || cur.LastSeq != seqErasing || cur.BusySince == nil || *cur.BusySince != mark {
			return err // taken over by a Create, or removed
		}
		_, err = s.removeDoc(ctx, id, cur.Incarnation, bson.D{{Key: "last_seq", Value: seqErasing}, {Key: "busy_since", Value: mark}})
		return err
	})
}

// sweepBatch is how many sessions Sweep reads at a time. Each is erased on
// its own (no transaction spans two sessions), so no writer waits for the
// sweep.
const sweepBatch = 100

// expiredFilter matches the committed sessions that have expired at now
// (Unix ns); on MongoDB the expires_ns index serves it.
func expiredFilter(now int64) bson.D {
	return bson.D{{Key: "last_seq", Value: bson.D{{Key: "$gte", Value: 0}}}, {Key: "expires_ns", Value: bson.D{{Key: "$lte", Value: now}}}}
}

// Sweep implements driver.Sweeper. It erases every expired session of the
// namespace, sweepBatch at a time, and returns how many; it also finishes
// Creates and Deletes that were interrupted more than StaleAfter ago, and
// removes event documents older than StaleAfter whose session document is
// gone (left by a crash, or by the server's TTL index on MongoDB).
func (s *Store) Sweep(ctx context.Context) (_ int, err error) {
	defer unavailable(&err)
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	now := s.now().UnixNano()
	stale := bson.NewDateTimeFromTime(time.Now().Add(-StaleAfter))
	expired := expiredFilter(now)
	abandoned := bson.D{{Key: "last_seq", Value: bson.D{{Key: "$lt", Value: 0}}}, {Key: "busy_since", Value: bson.D{{Key: "$lt", Value: stale}}}}
	n := 0
	skip := bson.A{} // sessions a batch could not erase (changed meanwhile): not read again
	for {
		filter := bson.D{{Key: "$or", Value: bson.A{expired, abandoned}}}
		if len(skip) > 0 {
			filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$nin", Value: skip}}})
		}
		cur, err := s.sessions.Find(ctx, filter,
			options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "last_seq", Value: 1}}).SetLimit(sweepBatch))
		if err != nil {
			return n, fmt.Errorf("sweep: %w", err)
		}
		var docs []sessionDoc
		if err := cur.All(ctx, &docs); err != nil {
			return n, fmt.Errorf("sweep: %w", err)
		}
		for _, d := range docs {
			cond := expired
			if d.LastSeq < 0 {
				cond = abandoned
			}
			ok, err := s.erase(ctx, d.ID, cond)
			if err != nil {
				return n, fmt.Errorf("sweep %s: %w", d.ID, err)
			}
			switch {
			case !ok:
				skip = append(skip, d.ID)
			case d.LastSeq >= 0:
				n++
			}
		}
		if len(docs) < sweepBatch {
			break
		}
	}
	if err := s.sweepOrphans(ctx, stale); err != nil {
		return n, fmt.Errorf("sweep: %w", err)
	}
	if err := s.sweepSnapshots(ctx, stale); err != nil {
		return n, fmt.Errorf("sweep: %w", err)
	}
	// Claims of removers that died (see removeDoc).
	if _, err := s.sessions.DeleteMany(ctx, bson.D{{Key: "claim", Value: true}, {Key: "busy_since", Value: bson.D{{Key: "$lt", Value: stale}}}}); err != nil {
		return n, fmt.Errorf("sweep: %w", err)
	}
	return n, nil
}

// CountExpired counts the sessions that Sweep would erase now as expired:
// one count of the committed session documents whose expiry has passed
// (on MongoDB from the expires_ns index). It removes nothing.
func (s *Store) CountExpired(ctx context.Context) (_ int, err error) {
	defer unavailable(&err)
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	n, err := s.sessions.CountDocuments(ctx, expiredFilter(s.now().UnixNano()))
	if err != nil {
		return 0, fmt.Errorf("count expired: %w", err)
	}
	return int(n), nil
}

// sweepOrphans removes event documents written before stale whose session
// has no document. A session created since the scan has no event written
// before stale (its events follow its document), so it is never touched.
func (s *Store) sweepOrphans(ctx context.Context, stale bson.DateTime) error {
	old := bson.D{{Key: "written_at", Value: bson.D{{Key: "$lt", Value: stale}}}}
	cur, err := s.events.Aggregate(ctx, bson.A{
		bson.D{{Key: "$match", Value: old}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$session"}}}},
	})
	if err != nil {
		return err
	}
	var groups []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &groups); err != nil {
		return err
	}
	const chunk = 500
	for i := 0; i < len(groups); i += chunk {
		ids := bson.A{}
		for _, g := range groups[i:min(i+chunk, len(groups))] {
			ids = append(ids, g.ID)
		}
		cur, err := s.sessions.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
			options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			return err
		}
		var found []sessionDoc
		if err := cur.All(ctx, &found); err != nil {
			return err
		}
		have := map[string]bool{}
		for _, f := range found {
			have[f.ID] = true
		}
		missing := bson.A{}
		for _, id := range ids {
			if !have[id.(string)] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			continue
		}
		filter := append(bson.D{{Key: "session", Value: bson.D{{Key: "$in", Value: missing}}}}, old...)
		s.uncount(ctx, filter) // of sessions a TTL index removed
		if _, err := s.events.DeleteMany(ctx, filter); err != nil {
			return err
		}
	}
	return nil
}
