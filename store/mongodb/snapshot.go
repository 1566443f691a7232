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

var _ cairn.Snapshotter = (*Store)(nil)

// maxSnapshotBytes keeps a snapshot document under MongoDB's 16 MiB
// limit, with room for its other fields.
const maxSnapshotBytes = 16<<20 - 4<<10

// snapshotDoc is a document of the <ns>.snapshots collection: a snapshot
// of one incarnation of a session (the session document's inc), at a seq.
// A session may have a few for a moment (puts racing); the one of the
// highest seq of the session's incarnation is its snapshot, and each put
// removes those below its own. A unique index on (session, seq) keeps one
// document per position.
type snapshotDoc struct {
	Session   string        `bson:"session"`
	Seq       int64         `bson:"seq"`
	Inc       string        `bson:"inc"`        // the session document's incarnation
	WrittenAt bson.DateTime `bson:"written_at"` // real clock, for the erasure's cut (see erase)
	Data      []byte        `bson:"data"`
}

// PutSnapshot implements cairn.Snapshotter.
//
// Each put writes a document of its own seq, never one another put
// writes, so that no put undoes another's write even on a server that
// applies an update as a read and a later write of the whole document
// (FerretDB): of puts racing, the one of the highest seq stays. A put
// reads the live session's incarnation, returns at once when a snapshot
// of a higher seq is there, replaces (or inserts) the document of its
// seq, removes those of lower seqs, and reads the session again: if it
// has been deleted meanwhile, or deleted and created again, it removes
// its document and returns ErrNotFound. A document left by a put that
// died in between belongs to an incarnation that readers do not ask for,
// and Create, Delete and Sweep remove it. The session document is not
// written: its updated time and expiry stay as they are.
func (s *Store) PutSnapshot(ctx context.Context, id string, snap cairn.Snapshot) (err error) {
	defer unavailable(&err)
	if err := s.guard.Snapshot(id, snap, maxSnapshotBytes); err != nil {
		return err
	}
	if err := s.put(ctx, id, snap); err != nil {
		return fmt.Errorf("put snapshot %s: %w", id, err)
	}
	return nil
}

func (s *Store) put(ctx context.Context, id string, snap cairn.Snapshot) error {
	inc, err := s.incarnation(ctx, id)
	if err != nil {
		return err
	}
	cur, err := s.latestSnapshot(ctx, id, inc, false)
	if err != nil {
		return err
	}
	if cur != nil && cur.Seq > snap.Seq {
		return nil // a later snapshot is there: this one is dropped
	}
	if err := s.indexSnapshots(ctx); err != nil {
		return err
	}
	at := bson.D{{Key: "session", Value: id}, {Key: "seq", Value: snap.Seq}}
	doc := snapshotDoc{Session: id, Seq: snap.Seq, Inc: inc, WrittenAt: bson.NewDateTimeFromTime(time.Now()), Data: snap.Data}
	for try := 0; ; try++ {
		_, err = s.snapshots.ReplaceOne(ctx, at, doc, options.Replace().SetUpsert(true))
		if err == nil || !mongo.IsDuplicateKeyError(err) || try == 2 {
			break
		}
		// Two upserts of one seq at once: the other inserted it first,
		// and this one replaces it now.
	}
	if err != nil {
		return err
	}
	if _, err := s.snapshots.DeleteMany(ctx, bson.D{{Key: "session", Value: id}, {Key: "seq", Value: bson.D{{Key: "$lt", Value: snap.Seq}}}}); err != nil {
		return err
	}
	again, err := s.incarnation(ctx, id)
	if err == nil && again == inc {
		return nil
	}
	// Deleted (or deleted and made again) while we wrote: the snapshot
	// is not the session's.
	_ = cleanup(ctx, func(ctx context.Context) error {
		_, err := s.snapshots.DeleteOne(ctx, bson.D{{Key: "session", Value: id}, {Key: "seq", Value: snap.Seq}, {Key: "inc", Value: inc}})
		return err
	})
	if err == nil {
		err = cairn.ErrNotFound
	}
	return err
}

// LoadSnapshot implements cairn.Snapshotter: the live session's
// incarnation, then its snapshot of the highest seq.
func (s *Store) LoadSnapshot(ctx context.Context, id string) (_ *cairn.Snapshot, err error) {
	defer unavailable(&err)
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	inc, err := s.incarnation(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", id, err)
	}
	doc, err := s.latestSnapshot(ctx, id, inc, true)
	if err != nil || doc == nil {
		if err != nil {
			err = fmt.Errorf("load snapshot %s: %w", id, err)
		}
		return nil, err
	}
	return &cairn.Snapshot{Seq: doc.Seq, Data: doc.Data}, nil
}

// DropSnapshot implements cairn.Snapshotter: it removes every snapshot
// document of the live session.
func (s *Store) DropSnapshot(ctx context.Context, id string) (err error) {
	defer unavailable(&err)
	if err := s.guard.Session(id); err != nil {
		return err
	}
	if _, err := s.incarnation(ctx, id); err != nil {
		return fmt.Errorf("drop snapshot %s: %w", id, err)
	}
	if _, err := s.snapshots.DeleteMany(ctx, bson.D{{Key: "session", Value: id}}); err != nil {
		return fmt.Errorf("drop snapshot %s: %w", id, err)
	}
	return nil
}

// incarnation returns the incarnation of the live session id ("" for a
// session made by a version of the store before incarnations), or
// ErrNotFound.
func (s *Store) incarnation(ctx context.Context, id string) (string, error) {
	var doc sessionDoc
	err := s.sessions.FindOne(ctx, liveFilter(id, s.now()),
		options.FindOne().SetProjection(bson.D{{Key: "inc", Value: 1}})).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", cairn.ErrNotFound
	}
	return doc.Incarnation, err
}

// latestSnapshot returns the snapshot document of the highest seq of the
// incarnation inc of session id, with its data when withData is set; nil
// when there is none.
func (s *Store) latestSnapshot(ctx context.Context, id, inc string, withData bool) (*snapshotDoc, error) {
	opts := options.FindOne().SetSort(bson.D{{Key: "seq", Value: -1}})
	if !withData {
		opts.SetProjection(bson.D{{Key: "data", Value: 0}})
	}
	var doc snapshotDoc
	err := s.snapshots.FindOne(ctx, bson.D{{Key: "session", Value: id}, {Key: "inc", Value: inc}}, opts).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &doc, nil
}

// indexSnapshots creates the snapshots' unique index on (session, seq),
// once per Store, at the first put: a namespace that never keeps a
// snapshot has no snapshots collection.
func (s *Store) indexSnapshots(ctx context.Context) error {
	s.mu.Lock()
	done := s.snapIndexed
	s.mu.Unlock()
	if done {
		return nil
	}
	_, err := s.snapshots.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "session", Value: 1}, {Key: "seq", Value: 1}},
		Options: options.Index().SetName("session_seq").SetUnique(true),
	})
	if err != nil {
		return fmt.Errorf("create index on %s: %w", s.snapshots.Name(), err)
	}
	s.mu.Lock()
	s.snapIndexed = true
	s.mu.Unlock()
	return nil
}

// eraseSnapshots removes the snapshot documents of session id written
// before cut: an erasure's (see erase), or a Create's of the documents an
// earlier session of the ID left.
func (s *Store) eraseSnapshots(ctx context.Context, id string, cut bson.DateTime) error {
	_, err := s.snapshots.DeleteMany(ctx, bson.D{{Key: "session", Value: id}, {Key: "written_at", Value: bson.D{{Key: "$lt", Value: cut}}}})
	return err
}

// sweepSnapshots removes the snapshot documents written before stale
// whose session has no live document of their incarnation: left by puts
// that raced a Delete, or by sessions that the server's TTL index purged.
func (s *Store) sweepSnapshots(ctx context.Context, stale bson.DateTime) error {
	cur, err := s.snapshots.Find(ctx, bson.D{{Key: "written_at", Value: bson.D{{Key: "$lt", Value: stale}}}},
		options.Find().SetProjection(bson.D{{Key: "session", Value: 1}, {Key: "inc", Value: 1}}))
	if err != nil {
		return err
	}
	var docs []snapshotDoc
	if err := cur.All(ctx, &docs); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, d := range docs {
		if seen[d.Session] {
			continue
		}
		seen[d.Session] = true
		inc, err := s.incarnation(ctx, d.Session)
		filter := bson.D{{Key: "session", Value: d.Session}, {Key: "written_at", Value: bson.D{{Key: "$lt", Value: stale}}}}
		switch {
		case errors.Is(err, cairn.ErrNotFound):
		case err != nil:
			return err
		default:
			filter = append(filter, bson.E{Key: "inc", Value: bson.D{{Key: "$ne", Value: inc}}})
		}
		if _, err := s.snapshots.DeleteMany(ctx, filter); err != nil {
			return err
		}
	}
	return nil
}
