package crypt

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
)

// RekeyResult counts what Rekey did.
type RekeyResult struct {
	Sessions  int `json:"sessions"`  // sessions with a data key
	Rewrapped int `json:"rewrapped"` // data keys wrapped anew by the current key
	Current   int `json:"current"`   // already wrapped by the current key
}

// Rekey wraps every session's data key by the keyring's current master key,
// so that the store can be read with that key alone. It does not re-encrypt
// any event: the data keys stay the same. The keyring must also hold the key
// the data keys are wrapped by now. progress, if not nil, is called after
// each session with the count done and the total.
//
// Rekey is the one way a key joins a namespace: before any data key, it
// records the current key in the namespace's marker, and it refuses (a
// *WrongKeyError) a keyring that holds none of the keys the marker names.
// Every other write through a store whose key the marker does not name is
// refused, so that a wrong key file cannot seal sessions that the
// namespace's own key does not open.
//
// Rekey is safe to run while other processes write: a wrapping is one
// append to the key session, retried on a conflict. Running it again
// resumes where an interrupted run stopped. Earlier wrappings stay in the
// key session; once Rekey has finished, destroying the old key file makes
// them, and every copy of the store taken before, unreadable.
func (s *store) Rekey(ctx context.Context, progress func(done, total int)) (RekeyResult, error) {
	var res RekeyResult
	if s.ring == nil {
		return res, errors.New("rekey: no keyring")
	}
	// The new key joins the namespace's marker first, so that readers
	// without a key are told of it and writers with it are admitted; the
	// keyring must hold one of the namespace's keys (see markForRekey).
	if err := s.markForRekey(ctx); err != nil {
		return res, fmt.Errorf("rekey: %w", err)
	}
	ids, err := keyIDs(ctx, s.keys)
	if err != nil {
		return res, fmt.Errorf("rekey: list data keys: %w", err)
	}
	res.Sessions = len(ids)
	for i, id := range ids {
		done, err := s.rekeyOne(ctx, id)
		if err != nil {
			return res, fmt.Errorf("rekey %s: %w", id, err)
		}
		if done {
			res.Rewrapped++
		} else {
			res.Current++
		}
		if progress != nil {
			progress(i+1, len(ids))
		}
	}
	return res, nil
}

// rekeyOne wraps one session's data key by the current key if the newest
// wrapping is by another; it reports whether it wrote one.
func (s *store) rekeyOne(ctx context.Context, id string) (bool, error) {
	for range 5 {
		sk, _, err := s.readKey(ctx, id)
		if errors.Is(err, errNoKey) {
			return false, nil // deleted meanwhile, or never finished
		}
		if err != nil {
			return false, err
		}
		if sk.kid == s.ring.Current() {
			return false, nil
		}
		err = s.appendWrapping(ctx, id, sk, sk.lastSeq)
		if errors.Is(err, cairn.ErrConflict) {
			continue
		}
		if errors.Is(err, cairn.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		s.remember(id, sk)
		return true, nil
	}
	return false, fmt.Errorf("data key kept changing: %w", cairn.ErrConflict)
}
