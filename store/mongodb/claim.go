package mongodb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

var _ driver.Claimer = (*Store)(nil)

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

// ClaimNext implements driver.Claimer, not in one atomic step: a query per
// status finds the oldest few candidates without a live lease (by the
// session document's lease_expires_ns hint), and Acquire is tried on each
// until one succeeds, which is as safe as Acquire. When every candidate
// was taken meanwhile it queries again, up to claimRounds times, and then
// returns an error that says so; cairn.ErrNotFound when it finds none.
// Only the filter's Status and Labels count. What it costs on FerretDB:
// docs/STORES.md, "The MongoDB store", Claims.
func (s *Store) ClaimNext(ctx context.Context, holder string, ttl time.Duration, filter cairn.ListOptions) (_ cairn.Lease, err error) {
	defer unavailable(&err)
	if err := s.guard.Lease("claim", holder, ttl); err != nil {
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
// claimBatch), by creation time then ID, that match filter's statuses and
// labels and have no live lease according to their lease_expires_ns,
// leaving out those of skip. A filter of several statuses takes one query
// per status, run at once, and merges them: equality on the status is a
// filter that every server serves from the index, FerretDB included,
// where an $in would read every session of the namespace.
func (s *Store) claimCandidates(ctx context.Context, filter cairn.ListOptions, skip bson.A) ([]string, error) {
	now := s.now()
	q := live(now)
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
	if len(filter.Status) == 0 {
		found, err := s.candidates(ctx, q)
		return ids(found), err
	}
	var (
		wg    sync.WaitGroup
		found = make([][]candidate, len(filter.Status))
		errs  = make([]error, len(filter.Status))
	)
	for i, st := range filter.Status {
		wg.Go(func() {
			found[i], errs[i] = s.candidates(ctx, append(q[:len(q):len(q)], bson.E{Key: "status", Value: string(st)}))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	all := slices.Concat(found...)
	slices.SortFunc(all, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.Created, b.Created), strings.Compare(a.ID, b.ID))
	})
	return ids(all[:min(len(all), claimBatch)]), nil
}

// candidate is a session ClaimNext may take.
type candidate struct {
	ID      string `bson:"_id"`
	Created int64  `bson:"created_ns"`
}

// candidates runs one query of claimCandidates.
func (s *Store) candidates(ctx context.Context, q bson.D) ([]candidate, error) {
	cur, err := s.sessions.Find(ctx, q, options.Find().
		SetSort(bson.D{{Key: "created_ns", Value: 1}, {Key: "_id", Value: 1}}).
		SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "created_ns", Value: 1}}).
		SetLimit(claimBatch))
	if err != nil {
		return nil, err
	}
	var found []candidate
	if err := cur.All(ctx, &found); err != nil {
		return nil, err
	}
	return found, nil
}

func ids(found []candidate) []string {
	out := make([]string, len(found))
	for i, c := range found {
		out[i] = c.ID
	}
	return out
}
