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

var _ cairn.Leaser = (*Store)(nil)

// leaseDoc is one generation of a session's lease.
type leaseDoc struct {
	Session   string        `bson:"session"`
	Seq       int64         `bson:"seq"` // -generation
	Holder    string        `bson:"holder"`
	Token     int64         `bson:"lease_token"`
	Expires   int64         `bson:"expires_ns"`
	Released  bool          `bson:"released"`
	WrittenAt bson.DateTime `bson:"written_at"`          // real clock, for the erasure's cut (see erase)
	Takeovers int64         `bson:"takeovers,omitempty"` // cairn.Lease's, this generation's included
}

// lease returns the cairn.Lease that d records.
func (d *leaseDoc) lease() cairn.Lease {
	return cairn.Lease{Session: d.Session, Holder: d.Holder, Token: d.Token, Expires: time.Unix(0, d.Expires).UTC(), Takeovers: d.Takeovers}
}

// key is the filter of the lease document d, by its generation and its
// token: a session created again may have a document at that generation,
// never with that token.
func (d *leaseDoc) key() bson.D {
	return bson.D{{Key: "session", Value: d.Session}, {Key: "seq", Value: d.Seq}, {Key: "lease_token", Value: d.Token}}
}

// readLease returns the lease of a live session, or nil when it has none,
// and the lease document of the highest generation, or nil when there is
// none, from which a new lease takes its generation and token.
//
// The lease is the document whose token the session document records
// (lease_token). An Acquire writes its lease document before it records
// the token, and one that then finds its session gone (deleted, perhaps
// created again, while it waited or its request was on its way) records
// nothing and leaves its document behind: such a document is no lease,
// whatever its generation, or a session created again would be held by a
// holder that was told it was not found.
func (s *Store) readLease(ctx context.Context, id string, now time.Time) (cur, latest *leaseDoc, err error) {
	var doc struct {
		Token int64 `bson:"lease_token"`
	}
	err = s.sessions.FindOne(ctx, liveFilter(id, now),
		options.FindOne().SetProjection(bson.D{{Key: "lease_token", Value: 1}})).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil, cairn.ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	leases := bson.D{{Key: "session", Value: id}, {Key: "seq", Value: bson.D{{Key: "$lt", Value: 0}}}}
	latest, err = findLease(ctx, s.events, leases, options.FindOne().SetSort(bson.D{{Key: "seq", Value: 1}}))
	if err != nil || latest == nil || doc.Token == 0 {
		return nil, latest, err
	}
	if latest.Token == doc.Token {
		return latest, latest, nil
	}
	// A document left above the lease: look the lease up by its token.
	cur, err = findLease(ctx, s.events, append(leases, bson.E{Key: "lease_token", Value: doc.Token}))
	return cur, latest, err
}

// findLease returns the lease document filter matches, or nil.
func findLease(ctx context.Context, events *mongo.Collection, filter bson.D, opts ...options.Lister[options.FindOneOptions]) (*leaseDoc, error) {
	var d leaseDoc
	err := events.FindOne(ctx, filter, opts...).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// Acquire implements cairn.Leaser. A lease is a document among the
// session's events, at seq -generation, so that the unique index lets one
// of many racing acquirers win even on FerretDB; the winner records its
// token (and raises the fence) in the session document, and that record
// makes the lease. docs/STORES.md, "The MongoDB store", Leases.
func (s *Store) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (_ cairn.Lease, err error) {
	defer unavailable(&err)
	return s.acquire(ctx, id, holder, ttl, false)
}

// Takeover implements cairn.Leaser.
func (s *Store) Takeover(ctx context.Context, id, holder string, ttl time.Duration) (_ cairn.Lease, err error) {
	defer unavailable(&err)
	return s.acquire(ctx, id, holder, ttl, true)
}

func (s *Store) acquire(ctx context.Context, id, holder string, ttl time.Duration, force bool) (cairn.Lease, error) {
	if err := s.guard.Lease(id, holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	for range 5 {
		lease, err := s.acquireOnce(ctx, id, holder, ttl, force)
		if errors.Is(err, errLeaseRace) {
			continue
		}
		if err != nil {
			if _, ok := errors.AsType[*cairn.LeaseHeldError](err); ok {
				return cairn.Lease{}, err
			}
			return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, err)
		}
		return lease, nil
	}
	return cairn.Lease{}, fmt.Errorf("acquire %s: the lease changed hands five times; try again", id)
}

// errLeaseRace says that another acquirer took the lease generation an
// Acquire or Takeover was about to take: it looks again.
var errLeaseRace = errors.New("another acquirer took the lease's generation first")

// acquireOnce takes the lease under a hold of the session's next position
// (see hold): the live session, its lease documents and the lease
// recorded in the session document are read and written with no Delete,
// no other lease change and no commit between, and a lease document is
// written only while the session lives, so that an Acquire that finds the
// session gone leaves no lease behind for another to find held.
//
// An Acquire that finds a live lease, before it takes the hold or while it
// waits for it, answers that it is held at once: the lease documents are
// written under the hold, while the session lives.
func (s *Store) acquireOnce(ctx context.Context, id, holder string, ttl time.Duration, force bool) (lease cairn.Lease, err error) {
	now := s.now()
	var quit func(context.Context) error
	if !force {
		quit = func(ctx context.Context) error {
			cur, _, err := s.readLease(ctx, id, now)
			if err == nil && cur != nil && !cur.Released && cur.Expires > now.UnixNano() {
				err = &cairn.LeaseHeldError{Session: id, Holder: cur.Holder, Expires: time.Unix(0, cur.Expires).UTC()}
			}
			return err
		}
		if err := quit(ctx); err != nil {
			return lease, err
		}
	}
	h, release, err := s.hold(ctx, id, live(now), quit)
	if err != nil {
		return lease, err
	}
	defer func() { release(err) }()
	cur, latest, err := s.readLease(ctx, id, now)
	if err != nil {
		return lease, err
	}
	if cur != nil && !cur.Released && cur.Expires > now.UnixNano() && !force {
		return lease, &cairn.LeaseHeldError{Session: id, Holder: cur.Holder, Expires: time.Unix(0, cur.Expires).UTC()}
	}
	gen, tok := int64(1), time.Now().UnixNano()
	if latest != nil {
		gen, tok = -latest.Seq+1, max(tok, latest.Token+1)
	}
	// The count goes on from the recorded lease, up one when its holder
	// had not released it (expired, or taken over live).
	var takeovers int64
	if cur != nil {
		takeovers = cur.Takeovers
		if !cur.Released {
			takeovers++
		}
	}
	exp := now.Add(ttl)
	_, err = s.events.InsertOne(ctx, leaseDoc{Session: id, Seq: -gen, Holder: holder, Token: tok, Expires: exp.UnixNano(),
		WrittenAt: bson.NewDateTimeFromTime(time.Now()), Takeovers: takeovers})
	if mongo.IsDuplicateKeyError(err) {
		// Another acquirer took this generation first: look again (its
		// lease is one once it records its token).
		return lease, errLeaseRace
	}
	if err != nil {
		return lease, err
	}
	// The token (raised with $max), a fence at the real clock's now, so
	// that no append that began before can commit, and the expiry hint.
	res, err := s.sessions.UpdateOne(ctx, h.at(liveFilter(id, now)), bson.D{
		{Key: "$max", Value: bson.D{{Key: "lease_token", Value: tok}, {Key: "fence", Value: time.Now().UnixNano()}}},
		{Key: "$set", Value: bson.D{{Key: "lease_expires_ns", Value: exp.UnixNano()}}},
	})
	if err == nil && res.MatchedCount == 0 {
		err = cairn.ErrNotFound
	}
	if err != nil {
		return lease, err
	}
	return cairn.Lease{Session: id, Holder: holder, Token: tok, Expires: exp, Takeovers: takeovers}, nil
}

// mine returns the lease document if lease is still the session's, or an
// error: ErrNotFound for a missing session, ErrLeaseLost otherwise.
//
// The lease documents are read after the session document: a lease that
// is not the caller's may be a session deleted between the two reads
// (Delete removes the lease documents after it marks the session), so the
// session is looked at again before the lease is said to be lost.
func (s *Store) mine(ctx context.Context, id string, lease cairn.Lease) (*leaseDoc, error) {
	cur, _, err := s.readLease(ctx, id, s.now())
	if err != nil {
		return nil, err
	}
	if cur == nil || cur.Released || lease.Session != id || cur.Token != lease.Token {
		n, err := s.sessions.CountDocuments(ctx, liveFilter(id, s.now()))
		if err == nil && n == 0 {
			err = cairn.ErrNotFound
		}
		if err != nil {
			return nil, err
		}
		return nil, cairn.ErrLeaseLost
	}
	return cur, nil
}

// Renew implements cairn.Leaser.
//
// Renew and Release read the lease and write its document under a hold of
// the session's next position (see hold), as Acquire and Takeover do. A
// renewal that read its lease as its own and wrote the new expiry while an
// Acquire, having read the same lease expired, was about to take the next
// generation would leave two holders, each told the lease was theirs. And
// FerretDB writes an update as a whole document read before: a renewal
// racing a release of the same lease could undo the release.
func (s *Store) Renew(ctx context.Context, lease cairn.Lease, ttl time.Duration) (_ cairn.Lease, err error) {
	defer unavailable(&err)
	if err := s.guard.Lease(lease.Session, lease.Holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	id := lease.Session
	err = s.underHold(ctx, id, func() error {
		cur, err := s.mine(ctx, id, lease)
		if err != nil {
			return err
		}
		exp := s.now().Add(ttl)
		if _, err := s.events.UpdateOne(ctx, cur.key(),
			bson.D{{Key: "$set", Value: bson.D{{Key: "expires_ns", Value: exp.UnixNano()}}}}); err != nil {
			return err
		}
		lease.Expires, lease.Takeovers = exp, cur.Takeovers
		return nil
	})
	if err != nil {
		return cairn.Lease{}, fmt.Errorf("renew %s: %w", id, err)
	}
	return lease, nil
}

// Release implements cairn.Leaser, under a hold as Renew is.
func (s *Store) Release(ctx context.Context, lease cairn.Lease) (err error) {
	defer unavailable(&err)
	if err := s.guard.Session(lease.Session); err != nil {
		return err
	}
	id := lease.Session
	err = s.underHold(ctx, id, func() error {
		cur, err := s.mine(ctx, id, lease)
		if err != nil {
			return err
		}
		_, err = s.events.UpdateOne(ctx, cur.key(),
			bson.D{{Key: "$set", Value: bson.D{{Key: "released", Value: true}}}})
		return err
	})
	if err != nil {
		return fmt.Errorf("release %s: %w", id, err)
	}
	return nil
}

// underHold runs f under a hold of the next position of live session id,
// and releases the hold with f's error. The hold keeps out lease changes,
// commits and the mark of a Delete that has not begun; it does not prove
// that the session still lives (an erasure that marked the session after
// the hold read it removes the erased session's holds, and the hold may
// then take a position of a session that is gone), so f reads the session
// again, as mine does.
func (s *Store) underHold(ctx context.Context, id string, f func() error) error {
	_, release, err := s.hold(ctx, id, live(s.now()), nil)
	if err != nil {
		return err
	}
	err = f()
	release(err)
	return err
}

// CurrentLease implements cairn.Leaser.
func (s *Store) CurrentLease(ctx context.Context, id string) (_ cairn.Lease, err error) {
	defer unavailable(&err)
	if err := s.guard.Session(id); err != nil {
		return cairn.Lease{}, err
	}
	now := s.now()
	cur, _, err := s.readLease(ctx, id, now)
	if err != nil {
		return cairn.Lease{}, fmt.Errorf("lease of %s: %w", id, err)
	}
	switch {
	case cur == nil:
		return cairn.Lease{Session: id}, nil
	case cur.Released || cur.Expires <= now.UnixNano():
		return cairn.Lease{Session: id, Takeovers: cur.Takeovers}, nil
	}
	return cur.lease(), nil
}

// AppendFenced implements cairn.Leaser: Append's insert and commit, with
// the lease's token in the commit's filter.
func (s *Store) AppendFenced(ctx context.Context, id string, lease cairn.Lease, expectSeq int64, events ...cairn.Event) (err error) {
	defer unavailable(&err)
	return s.append(ctx, id, &lease, expectSeq, events)
}

// clearFenced handles a fenced insert that met a position already held.
// Event documents above the session's last seq written before the
// session's fence can never commit (taking the lease raised the fence), so
// they are removed at once and errStrays asks the caller to try again,
// rather than waiting StaleAfter as a plain Append must. Anything else goes
// to onDuplicate.
func (s *Store) clearFenced(ctx context.Context, id string, expectSeq int64, docs []eventDoc) error {
	doc, err := s.head(ctx, liveFilter(id, s.now()))
	if err != nil {
		return err
	}
	if doc.LastSeq != expectSeq {
		return s.retried(ctx, id, doc, expectSeq, docs)
	}
	res, err := s.events.DeleteMany(ctx, bson.D{
		{Key: "session", Value: id},
		{Key: "seq", Value: bson.D{{Key: "$gt", Value: doc.LastSeq}}},
		{Key: "written_at", Value: bson.D{{Key: "$lt", Value: fencedBefore(doc.Fence)}}},
	})
	if err != nil {
		return err
	}
	if res.DeletedCount > 0 {
		return errStrays
	}
	return s.onDuplicate(ctx, id, expectSeq, docs)
}

// CurrentLeases implements cairn.Leaser with two queries whatever the
// number of IDs: the live sessions of ids, with the token of their latest
// lease (lease_token), from the _id index; then, with one $or of a branch
// per session served by the (session, seq) index, their lease documents
// from that token on. Each session's lease is the document of the token
// its session document records, as CurrentLease reads it (see readLease):
// a newer one is an acquirer's that has not recorded its token yet, or
// never will.
func (s *Store) CurrentLeases(ctx context.Context, ids []string) (_ map[string]cairn.Lease, err error) {
	defer unavailable(&err)
	for _, id := range ids {
		if err := s.guard.Session(id); err != nil {
			return nil, err
		}
	}
	out := make(map[string]cairn.Lease, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	now := s.now()
	in := bson.A{}
	for _, id := range ids {
		in = append(in, id)
	}
	cur, err := s.sessions.Find(ctx, append(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}}, live(now)...),
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "lease_token", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("leases of %d sessions: %w", len(ids), err)
	}
	var docs []struct {
		ID    string `bson:"_id"`
		Token int64  `bson:"lease_token"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("leases of %d sessions: %w", len(ids), err)
	}
	if len(docs) == 0 {
		return out, nil
	}
	// One range of the (session, seq) index per session: its lease
	// documents (seq < 0). The current token's is picked below. (An $or
	// of a branch per session, with the token in it, is what MongoDB
	// would serve as well, but FerretDB evaluates every branch on every
	// event document: 15 s for a page of 50 at 10,000 sessions.)
	token := make(map[string]int64, len(docs))
	sessions := bson.A{}
	least := docs[0].Token
	for _, d := range docs {
		token[d.ID] = d.Token
		sessions = append(sessions, d.ID)
		least = min(least, d.Token)
	}
	// Tokens only grow, so the least current token leaves out the
	// sessions' older lease documents.
	cur, err = s.events.Find(ctx, bson.D{{Key: "session", Value: bson.D{{Key: "$in", Value: sessions}}},
		{Key: "seq", Value: bson.D{{Key: "$lt", Value: 0}}}, {Key: "lease_token", Value: bson.D{{Key: "$gte", Value: least}}}})
	if err != nil {
		return nil, fmt.Errorf("leases of %d sessions: %w", len(ids), err)
	}
	var all []leaseDoc
	if err := cur.All(ctx, &all); err != nil {
		return nil, fmt.Errorf("leases of %d sessions: %w", len(ids), err)
	}
	for _, l := range all {
		if l.Token == token[l.Session] && !l.Released && l.Expires > now.UnixNano() {
			out[l.Session] = l.lease()
		}
	}
	return out, nil
}
