package mongodb

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/cairnhq/cairn"
)

// Unavailable returns err as a store method returns it: wrapping
// cairn.ErrUnavailable when it is an outage.
func Unavailable(err error) error {
	unavailable(&err)
	return err
}

// WrittenBefore is the filter of an erasure's removals (writtenBefore).
var WrittenBefore = writtenBefore

// Fill writes committed sessions, each of the given events from seq 1,
// straight into the collections, a thousand documents an insert, as
// Create and Append would leave them: the benchmarks' quick fill. The
// statistics are sent at once.
func (s *Store) Fill(ctx context.Context, sessions map[string][]cairn.Event) error {
	wall := time.Now()
	now := s.now()
	var docs, evs []any
	flush := func(coll *mongo.Collection, batch *[]any, at int) error {
		if len(*batch) < at || len(*batch) == 0 {
			return nil
		}
		_, err := coll.InsertMany(ctx, *batch)
		*batch = (*batch)[:0]
		return err
	}
	for id, events := range sessions {
		expNs, expAt := s.expiry(now)
		docs = append(docs, sessionDoc{ID: id, LastSeq: int64(len(events)), CreatedNs: now.UnixNano(), UpdatedNs: now.UnixNano(),
			ExpiresNs: expNs, CreatedAt: bson.NewDateTimeFromTime(now), UpdatedAt: bson.NewDateTimeFromTime(now), ExpiresAt: expAt,
			Status: string(cairn.StatusCompleted), Labels: []string{}, Fence: wall.UnixNano(), Born: wall.UnixNano() - 1e6, Incarnation: newToken()})
		ed, err := eventDocs(id, events)
		if err != nil {
			return err
		}
		token := newToken()
		for i := range ed {
			ed[i].Token, ed[i].WrittenAt = token, bson.NewDateTimeFromTime(wall)
			evs = append(evs, ed[i])
		}
		s.addStats(indexed(ed))
		if err := flush(s.sessions, &docs, 1000); err != nil {
			return err
		}
		if err := flush(s.events, &evs, 1000); err != nil {
			return err
		}
	}
	if err := flush(s.sessions, &docs, 0); err != nil {
		return err
	}
	if err := flush(s.events, &evs, 0); err != nil {
		return err
	}
	return s.sendStats(ctx)
}
