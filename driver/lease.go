package driver

import (
	"context"
	"errors"

	"github.com/cairnhq/cairn"
)

// CurrentLeases is cairn.Leaser's CurrentLeases for a store whose
// CurrentLease is a local lookup (memory, files): one CurrentLease per ID,
// missing and damaged sessions and free leases left out. A store with a server answers
// with one query instead.
func CurrentLeases(ctx context.Context, l cairn.Leaser, ids []string) (map[string]cairn.Lease, error) {
	out := make(map[string]cairn.Lease, len(ids))
	for _, id := range ids {
		lease, err := l.CurrentLease(ctx, id)
		switch {
		case errors.Is(err, cairn.ErrNotFound), errors.Is(err, cairn.ErrDamaged):
			// Gone, or read-only: nobody runs a damaged session.
		case err != nil:
			return nil, err
		case lease.Holder != "":
			out[id] = lease
		}
	}
	return out, nil
}
