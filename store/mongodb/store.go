package mongodb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/text"
)

// DefaultDatabase is the database a URI without a path uses.
const DefaultDatabase = "cairn"

// StaleAfter is how long, on the real clock, an event document written
// above a session's last seq may stay uncommitted before an Append treats
// it as left by a dead writer and removes it (see the package
// documentation). It also bounds how long an interrupted Create or Delete
// holds a session ID.
const StaleAfter = 30 * time.Second

// CommitWait is how long, at most, an Append whose insert meets the
// uncommitted events of a live writer at its position waits for that
// writer to commit or give up, and a Create that meets a Create in
// progress waits for it to finish, before returning an error that wraps
// cairn.ErrUnavailable. A call's context can end the wait sooner.
const CommitWait = 2 * time.Second

// maxEventBytes keeps every event document under MongoDB's 16 MiB limit,
// with room for the document's other fields.
const maxEventBytes = 16<<20 - 4<<10

func init() { driver.RegisterByURL(Open, "mongodb", "mongodb+srv") }

// Store is a cairn.Store on a MongoDB database (or a server that speaks
// its wire protocol, such as FerretDB). It is safe for concurrent use by
// many goroutines and many processes.
type Store struct {
	opts      cairn.StoreOptions
	client    *mongo.Client // closed by Close when Open made it
	sessions  *mongo.Collection
	events    *mongo.Collection
	snapshots *mongo.Collection // snapshot.go
	search    *mongo.Collection // the text index's statistics (search_index.go)
	native    bool              // the TTL index on expires_at exists
	tokIndex  bool              // the index on the event documents' toks exists
	ferret1   bool              // the server is FerretDB 1.x
	stripe    string            // this store's document of the statistics
	pending   pendingStats      // what it has not yet sent of them

	guard driver.Guard

	mu          sync.Mutex
	snapIndexed bool // the snapshots' index was made (indexSnapshots)
	// leftovers holds, by session, the tokens of this store's last failed
	// appends, whose documents may have outlived their removal (the
	// connection broke): no live writer holds them, so onDuplicate removes
	// them at once instead of waiting until they are StaleAfter old.
	leftovers map[string][]leftover
}

var (
	_ cairn.Store    = (*Store)(nil)
	_ driver.Sweeper = (*Store)(nil)
)

// Open connects to the MongoDB server a URI names, such as
// "mongodb://127.0.0.1:27017/cairn?w=majority", and returns a store on the
// URI's database ("cairn" when the URI has no path). Close disconnects.
func Open(ctx context.Context, uri string, opts cairn.StoreOptions) (*Store, error) {
	if _, err := driver.Options(opts); err != nil {
		return nil, err
	}
	client, db, err := connect(uri)
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, db, opts)
	if err != nil {
		_ = disconnect(ctx, client)
		unavailable(&err)
		return nil, fmt.Errorf("open mongodb %s: %w (is the server running and reachable?)", text.RedactURL(uri), err)
	}
	s.client = client
	return s, nil
}

// New returns a store on db, whose client the caller keeps and disconnects
// after Close. It creates the namespace's collections and indexes if they
// are missing, and indexes the text of events written before the text
// index, once per namespace (see the package documentation).
func New(ctx context.Context, db *mongo.Database, opts cairn.StoreOptions) (*Store, error) {
	opts, err := driver.Options(opts)
	if err != nil {
		return nil, err
	}
	if opts.Limits.MaxEventBytes > maxEventBytes {
		opts.Limits.MaxEventBytes = maxEventBytes
	}
	s := &Store{
		opts:      opts,
		sessions:  db.Collection(opts.Namespace + ".sessions"),
		events:    db.Collection(opts.Namespace + ".events"),
		snapshots: db.Collection(opts.Namespace + ".snapshots"),
		search:    db.Collection(opts.Namespace + ".search"),
		stripe:    "stats/" + strconv.Itoa(rand.IntN(statStripes)),
	}
	if err := s.ensureIndexes(ctx); err != nil {
		return nil, err
	}
	if err := s.indexTokens(ctx); err != nil {
		return nil, err
	}
	if err := s.indexOld(ctx); err != nil {
		return nil, fmt.Errorf("index the text of older events: %w", err)
	}
	return s, nil
}

// connect makes a client of the server a MongoDB URI names, and returns
// it with the URI's database ("cairn" when the URI has no path).
func connect(uri string) (*mongo.Client, *mongo.Database, error) {
	dbName, err := databaseName(uri)
	if err != nil {
		return nil, nil, fmt.Errorf("open mongodb %s: %w", text.RedactURL(uri), err)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return nil, nil, fmt.Errorf("open mongodb %s: %w", text.RedactURL(uri), err)
	}
	return client, client.Database(dbName), nil
}

// disconnect disconnects client, waiting 10 seconds at most, even after
// ctx ends.
func disconnect(ctx context.Context, client *mongo.Client) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return client.Disconnect(ctx)
}

// databaseName returns the database named by a MongoDB URI's path.
func databaseName(uri string) (string, error) {
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return "", errors.New("not a mongodb:// or mongodb+srv:// URI")
	}
	rest, _, _ = strings.Cut(rest, "?")
	_, path, ok := strings.Cut(rest, "/")
	if !ok || path == "" {
		return DefaultDatabase, nil
	}
	name, err := url.PathUnescape(path)
	if err != nil || strings.ContainsAny(name, `/\. "$`) {
		return "", fmt.Errorf("bad database name %q", path)
	}
	return name, nil
}

// ensureIndexes creates the indexes the store relies on: (session, seq)
// unique on the events; on the sessions (updated_ns desc, _id desc) for
// List, (status, updated_ns desc, _id desc) and (labels, updated_ns desc,
// _id desc) for its filters, (status, created_ns, _id) for ClaimNext and
// expires_ns for Sweep. Creating an index that exists is a no-op, so a
// namespace written by an earlier version gets the new ones at its next
// Open (the server builds them from the documents: labels were always
// stored as an array of "[key, value]" strings). A TTL index on
// the sessions' expires_at is attempted; a server that refuses it (such as
// FerretDB) leaves expiry to read filters and Sweep.
func (s *Store) ensureIndexes(ctx context.Context) error {
	_, err := s.events.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "session", Value: 1}, {Key: "seq", Value: 1}},
		Options: options.Index().SetName("session_seq").SetUnique(true),
	})
	if err != nil {
		return fmt.Errorf("create index on %s: %w", s.events.Name(), err)
	}
	_, err = s.sessions.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "updated_ns", Value: -1}, {Key: "_id", Value: -1}},
		Options: options.Index().SetName("updated_id"),
	})
	if err != nil {
		return fmt.Errorf("create index on %s: %w", s.sessions.Name(), err)
	}
	for _, m := range []mongo.IndexModel{{
		Keys:    bson.D{{Key: "status", Value: 1}, {Key: "created_ns", Value: 1}, {Key: "_id", Value: 1}},
		Options: options.Index().SetName("status_created_id"),
	}, {
		Keys:    bson.D{{Key: "status", Value: 1}, {Key: "updated_ns", Value: -1}, {Key: "_id", Value: -1}},
		Options: options.Index().SetName("status_updated_id"),
	}, {
		Keys:    bson.D{{Key: "labels", Value: 1}, {Key: "updated_ns", Value: -1}, {Key: "_id", Value: -1}},
		Options: options.Index().SetName("labels_updated_id"),
	}, {
		Keys:    bson.D{{Key: "expires_ns", Value: 1}},
		Options: options.Index().SetName("expires_ns"),
	}} {
		if _, err := s.sessions.Indexes().CreateOne(ctx, m); err != nil {
			return fmt.Errorf("create index on %s: %w", s.sessions.Name(), err)
		}
	}
	_, err = s.sessions.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "expires_at", Value: 1}},
		Options: options.Index().SetName("expires_at_ttl").SetExpireAfterSeconds(0),
	})
	var se mongo.ServerError
	switch {
	case err == nil:
		s.native = true
	case errors.As(err, &se) && !mongo.IsNetworkError(err) && !mongo.IsTimeout(err):
		// Refused (FerretDB answers NotImplemented): expiry stays a read
		// filter plus Sweep, which work on every server.
	default:
		return fmt.Errorf("create index on %s: %w", s.sessions.Name(), err)
	}
	return nil
}

// NativeExpiry reports whether the server accepted the TTL index on the
// sessions' expires_at, so that it purges expired session documents by
// itself. Expired sessions are invisible either way.
func (s *Store) NativeExpiry() bool { return s.native }

// Collections returns the names of the namespace's two main collections:
// the sessions and the events.
func (s *Store) Collections() (sessions, events string) {
	return s.sessions.Name(), s.events.Name()
}

// SnapshotCollection returns the name of the namespace's collection of
// snapshots, which the first PutSnapshot makes.
func (s *Store) SnapshotCollection() string { return s.snapshots.Name() }

// SearchCollection returns the name of the namespace's collection of the
// text index's statistics; the index itself is in the event documents.
func (s *Store) SearchCollection() string { return s.search.Name() }

// Close implements cairn.Store. It sends what the store has not yet sent
// of the search statistics, and disconnects the client if Open made it.
// It is safe to call twice.
func (s *Store) Close() error {
	if !s.guard.Close() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.sendStats(ctx)
	if s.client != nil {
		if err := s.client.Disconnect(ctx); err != nil {
			return fmt.Errorf("close mongodb: %w", err)
		}
	}
	return nil
}

// now returns the store clock's time in UTC.
func (s *Store) now() time.Time { return s.opts.Now().UTC() }

// cleanup runs f, which finishes or undoes a half-done write, with a
// context of its own that survives the caller's cancellation for up to 10
// seconds, and waits for it only while ctx lasts: no method outlives its
// caller's context, and the cleanup goes on without the caller. It returns
// f's error, or ctx's when ctx ended first. Every cleanup is best effort:
// what it leaves behind, the recovery rules remove (see the package
// documentation).
func cleanup(ctx context.Context, f func(context.Context) error) error {
	done := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		done <- f(cctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
