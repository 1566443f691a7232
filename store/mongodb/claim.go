package mongodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
)

var _ cairn.Claimer = (*Store)(nil)

const (
	// claimBatch is how many candidates one query of ClaimNext returns:
	// enough that claimers racing down the same list mostly find one
	// left for each of them.
	claimBatch = 16
	// claimRounds is how many times ClaimNext queries for candidates
	// before it gives up, when others took every one it found meanwhile.
	// Each round leaves out the candidates tried before, and every lost
	// candidate went to another claimer, so only a crowd of claimers on a
	// short queue needs more than a few.
	claimRounds = 20
)

// ClaimNext implements cairn.Claimer. It is not one atomic step: one query
// finds the oldest few candidates (live, of the filter's statuses and
// labels, and without a live lease according to the session document's
// lease_expires_ns hint), sorted by creation time and ID, from the
// (status, created_ns, _id) index; then Acquire is tried on each in turn
// until one succeeds. It is as safe as Acquire, which lets exactly one of
// many racing claimers take a session. A candidate taken or removed
// meanwhile is passed over; when every candidate of a query was, it
// queries again (without them), up to claimRounds times, and then returns
// an error that says so. It returns cairn.ErrNotFound when the query finds
// no candidate.
//
// Only the filter's Status and Labels count; time bounds and paging are
// ignored. On FerretDB, whose PostgreSQL backend hands the database only
// equality filters (a single status, a single label) and sorts in the
// server, the query reads every session those filters let through:
// still one round trip per claim.
func (s *Store) ClaimNext(ctx context.Context, holder string, ttl time.Duration, filter cairn.ListOptions) (cairn.Lease, error) {
	if err := s.check(); err != nil {
		return cairn.Lease{}, err
	}
	if err := cairn.CheckLease("claim", holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	var tried bson.A
	for range claimRounds {
		ids, err := s.claimCandidates(ctx, filter, tried)
		if err != nil {
			return cairn.Lease{}, fmt.Errorf("claim in %s: %w", s.sessions.Name(), err)
		}
		if len(ids) == 0 {
			return cairn.Lease{}, fmt.Errorf("claim in %s: %w", s.sessions.Name(), cairn.ErrNotFound)
		}
		for _, id := range ids {
			lease, err := s.Acquire(ctx, id, holder, ttl)
			switch {
			case err == nil:
				return lease, nil
			case !errors.Is(err, cairn.ErrLeaseHeld) && !errors.Is(err, cairn.ErrNotFound):
				return cairn.Lease{}, fmt.Errorf("claim in %s: %w", s.sessions.Name(), err)
			}
			tried = append(tried, id)
		}
	}
	return cairn.Lease{}, fmt.Errorf("claim in %s: other claimers took all %d candidates found in %d queries; try again",
		s.sessions.Name(), len(tried), claimRounds)
}

// claimCandidates returns the IDs of the oldest sessions (at most
// claimBatch) that match filter's statuses and labels and have no live
// lease according to their lease_expires_ns, leaving out those of skip.
func (s *Store) claimCandidates(ctx context.Context, filter cairn.ListOptions, skip bson.A) ([]string, error) {
	now := s.now()
	q := live(now)
	switch len(filter.Status) {
	case 0:
	case 1:
		q = append(q, bson.E{Key: "status", Value: string(filter.Status[0])})
	default:
		st := bson.A{}
		for _, x := range filter.Status {
			st = append(st, string(x))
		}
		q = append(q, bson.E{Key: "status", Value: bson.D{{Key: "$in", Value: st}}})
	}
	pairs := encodeLabels(filter.Labels)
	switch len(pairs) {
	case 0:
	case 1:
		q = append(q, bson.E{Key: "labels", Value: pairs[0]})
	default:
		all := bson.A{}
		for _, p := range pairs {
			all = append(all, p)
		}
		q = append(q, bson.E{Key: "labels", Value: bson.D{{Key: "$all", Value: all}}})
	}
	q = append(q, bson.E{Key: "lease_expires_ns", Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$gt", Value: now.UnixNano()}}}}})
	if len(skip) > 0 {
		q = append(q, bson.E{Key: "_id", Value: bson.D{{Key: "$nin", Value: skip}}})
	}
	cur, err := s.sessions.Find(ctx, q, options.Find().
		SetSort(bson.D{{Key: "created_ns", Value: 1}, {Key: "_id", Value: 1}}).
		SetProjection(bson.D{{Key: "_id", Value: 1}}).
		SetLimit(claimBatch))
	if err != nil {
		return nil, err
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids, nil
}
