package mongodb

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
)

// Create implements cairn.Store. It takes up to four round trips: purge an
// expired or abandoned document of the ID, insert the new one in the
// creating state, remove event documents an earlier session of the ID left
// behind, and commit last_seq 0. While the document is in the creating
// state no Append can commit and no reader sees it.
func (s *Store) Create(ctx context.Context, meta cairn.SessionMeta) (err error) {
	defer unavailable(&err)
	if err := s.check(); err != nil {
		return err
	}
	if err := cairn.ValidateID(meta.ID); err != nil {
		return err
	}
	id := meta.ID
	now := s.now()
	wall := time.Now()
	stale := bson.NewDateTimeFromTime(wall.Add(-StaleAfter))
	_, err = s.sessions.DeleteOne(ctx, bson.D{
		{Key: "_id", Value: id},
		{Key: "$or", Value: bson.A{
			bson.D{{Key: "last_seq", Value: bson.D{{Key: "$gte", Value: 0}}}, {Key: "expires_ns", Value: bson.D{{Key: "$lte", Value: now.UnixNano()}}}},
			bson.D{{Key: "last_seq", Value: bson.D{{Key: "$lt", Value: 0}}}, {Key: "busy_since", Value: bson.D{{Key: "$lt", Value: stale}}}},
		}},
	})
	if err != nil {
		return fmt.Errorf("create %s: purge expired: %w", id, err)
	}
	created := meta.CreatedAt
	if created.IsZero() {
		created = now
	}
	expNs, expAt := s.expiry(now)
	busy := bson.NewDateTimeFromTime(wall)
	doc := sessionDoc{
		ID:        id,
		LastSeq:   seqCreating,
		CreatedNs: created.UnixNano(),
		UpdatedNs: now.UnixNano(),
		ExpiresNs: expNs,
		CreatedAt: bson.NewDateTimeFromTime(created),
		UpdatedAt: bson.NewDateTimeFromTime(now),
		ExpiresAt: expAt,
		Status:    string(cairn.StatusNew),
		Labels:    encodeLabels(meta.Labels),
		BusySince: &busy,
	}
	if _, err := s.sessions.InsertOne(ctx, doc); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return cairn.ErrExists
		}
		return fmt.Errorf("create %s: %w", id, err)
	}
	// From here on the document is ours: undo it if we cannot finish.
	fail := func(err error) error {
		_ = cleanup(ctx, func(ctx context.Context) error {
			_, err := s.sessions.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "last_seq", Value: seqCreating}})
			return err
		})
		return fmt.Errorf("create %s: %w", id, err)
	}
	if _, err := s.events.DeleteMany(ctx, bson.D{{Key: "session", Value: id}}); err != nil {
		return fail(fmt.Errorf("remove old events: %w", err))
	}
	res, err := s.sessions.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: id}, {Key: "last_seq", Value: seqCreating}},
		bson.D{
			{Key: "$set", Value: bson.D{{Key: "last_seq", Value: 0}}},
			{Key: "$unset", Value: bson.D{{Key: "busy_since", Value: ""}}},
		})
	if err != nil {
		return fail(err)
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("create %s: deleted while being created: %w", id, cairn.ErrNotFound)
	}
	return nil
}

// Delete implements cairn.Store. The session document is first marked as
// being erased (from then on every Append fails its commit and readers see
// nothing), then its event documents are removed, then the document.
func (s *Store) Delete(ctx context.Context, id string) (err error) {
	defer unavailable(&err)
	if err := s.check(); err != nil {
		return err
	}
	if err := cairn.ValidateID(id); err != nil {
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
// its events, and reports whether it matched.
func (s *Store) erase(ctx context.Context, id string, cond bson.D) (bool, error) {
	res, err := s.sessions.UpdateOne(ctx, append(bson.D{{Key: "_id", Value: id}}, cond...),
		bson.D{{Key: "$set", Value: bson.D{
			{Key: "last_seq", Value: seqErasing},
			{Key: "busy_since", Value: bson.NewDateTimeFromTime(time.Now())},
		}}})
	if err != nil {
		return false, err
	}
	if res.MatchedCount == 0 {
		return false, nil
	}
	// Past this point the session is gone for readers and writers; if we
	// fail here, Create or Sweep finishes the job after StaleAfter.
	return true, cleanup(ctx, func(ctx context.Context) error {
		if _, err := s.events.DeleteMany(ctx, bson.D{{Key: "session", Value: id}}); err != nil {
			return err
		}
		_, err := s.sessions.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "last_seq", Value: seqErasing}})
		return err
	})
}

// Sweep implements cairn.Sweeper. It erases every expired session of the
// namespace and returns how many; it also finishes Creates and Deletes
// that were interrupted more than StaleAfter ago, and removes event
// documents older than StaleAfter whose session document is gone (left by
// a crash, or by the server's TTL index on MongoDB).
func (s *Store) Sweep(ctx context.Context) (_ int, err error) {
	defer unavailable(&err)
	if err := s.check(); err != nil {
		return 0, err
	}
	now := s.now().UnixNano()
	stale := bson.NewDateTimeFromTime(time.Now().Add(-StaleAfter))
	expired := bson.D{{Key: "last_seq", Value: bson.D{{Key: "$gte", Value: 0}}}, {Key: "expires_ns", Value: bson.D{{Key: "$lte", Value: now}}}}
	abandoned := bson.D{{Key: "last_seq", Value: bson.D{{Key: "$lt", Value: 0}}}, {Key: "busy_since", Value: bson.D{{Key: "$lt", Value: stale}}}}
	cur, err := s.sessions.Find(ctx, bson.D{{Key: "$or", Value: bson.A{expired, abandoned}}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "last_seq", Value: 1}}))
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	var docs []sessionDoc
	if err := cur.All(ctx, &docs); err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	n := 0
	for _, d := range docs {
		cond := expired
		if d.LastSeq < 0 {
			cond = abandoned
		}
		ok, err := s.erase(ctx, d.ID, cond)
		if err != nil {
			return n, fmt.Errorf("sweep %s: %w", d.ID, err)
		}
		if ok && d.LastSeq >= 0 {
			n++
		}
	}
	if err := s.sweepOrphans(ctx, stale); err != nil {
		return n, fmt.Errorf("sweep: %w", err)
	}
	return n, nil
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
		if _, err := s.events.DeleteMany(ctx, filter); err != nil {
			return err
		}
	}
	return nil
}
