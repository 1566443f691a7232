package crypt

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
)

// keyType is the custom type of a key record.
const keyType = "cairn.key"

// keyRecord is the payload of a key record.
type keyRecord struct {
	KID     string `json:"kid"` // the master key that wrapped it
	DataKey string `json:"dk"`  // the data key's ID
	Wrapped string `json:"w"`   // base64 of nonce‖ciphertext‖tag
}

// sessionKey is a session's data key, opened.
//
// Each session's events are sealed with a data key of its own, made at its
// first append. The data key is stored wrapped (sealed) by the master key,
// in a key session: a session of the same ID in the store's key namespace
// (KeyNamespace), holding one custom event of type "cairn.key" (keyType)
// per wrapping. Rekeying appends a wrapping under the new master key;
// Delete deletes the key session before the session itself.
type sessionKey struct {
	id      string // the data key's ID
	dek     []byte
	kid     string // the master key of the newest wrapping
	lastSeq int64  // the key session's last seq
}

// KeyNamespace returns the namespace that holds the data keys of the
// sessions of namespace ns.
func KeyNamespace(ns string) string {
	if ns == "" {
		ns = cairn.DefaultNamespace
	}
	return ns + "__keys"
}

var errNoKey = errors.New("no data key")

// readKey reads a session's key session and opens its data key. It
// returns errNoKey when there is no key session or it holds no record.
func (s *store) readKey(ctx context.Context, id string) (*sessionKey, []keyRecord, error) {
	rec, err := s.keys.Load(ctx, id, 0)
	if errors.Is(err, cairn.ErrNotFound) {
		return nil, nil, errNoKey
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read data key of %s: %w", id, err)
	}
	var recs []keyRecord
	for _, e := range rec.Events {
		var c cairn.Custom
		var kr keyRecord
		if e.Kind != cairn.KindCustom || json.Unmarshal(e.Data, &c) != nil || c.Type != keyType || json.Unmarshal(c.Payload, &kr) != nil {
			return nil, nil, fmt.Errorf("%w: session %s: key record seq %d is malformed", ErrTampered, id, e.Seq)
		}
		recs = append(recs, kr)
	}
	if len(recs) == 0 {
		return nil, nil, errNoKey
	}
	var kids []string
	for _, kr := range slices.Backward(recs) {
		if kr.DataKey != recs[0].DataKey {
			return nil, nil, fmt.Errorf("%w: session %s: key records name two data keys", ErrTampered, id)
		}
		kids = append(kids, kr.KID)
		if _, ok := s.ring.byID[kr.KID]; !ok {
			continue
		}
		sealed, err := base64.StdEncoding.DecodeString(kr.Wrapped)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: session %s: wrapped data key is not base64", ErrTampered, id)
		}
		dek, err := s.ring.unwrap(kr.KID, sealed, keyAAD(s.ns, id, kr.DataKey))
		if err != nil {
			return nil, nil, fmt.Errorf("session %s: %w", id, err)
		}
		if dataKeyID(dek) != kr.DataKey {
			return nil, nil, fmt.Errorf("%w: session %s: data key does not match its id", ErrTampered, id)
		}
		return &sessionKey{id: kr.DataKey, dek: dek, kid: recs[len(recs)-1].KID, lastSeq: rec.Info.LastSeq}, recs, nil
	}
	slices.Sort(kids)
	return nil, nil, &UnknownKeyError{Session: id, KeyIDs: slices.Compact(kids), Held: s.ring.IDs()}
}

// UnknownKeyError is returned when a session's data key is wrapped only by
// master keys the keyring does not hold: the session was written under
// another key. It wraps ErrUnknownKey.
type UnknownKeyError struct {
	Session string
	KeyIDs  []string // the keys the session's data key is wrapped by
	Held    []string // the keys the keyring holds
}

// Error names the session, the keys its data key is wrapped by and those
// the keyring holds.
func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("%v: session %s: its data key is wrapped by key %s; the keyring holds %s",
		ErrUnknownKey, e.Session, strings.Join(e.KeyIDs, ", "), strings.Join(e.Held, ", "))
}

// Unwrap returns ErrUnknownKey.
func (e *UnknownKeyError) Unwrap() error { return ErrUnknownKey }

// dataKey returns a session's data key, from the cache or the key session.
// With create, a session that has none gets a new one.
func (s *store) dataKey(ctx context.Context, id string, create bool) (*sessionKey, error) {
	s.mu.Lock()
	sk := s.cache[id]
	s.mu.Unlock()
	if sk != nil {
		return sk, nil
	}
	for range 3 {
		sk, _, err := s.readKey(ctx, id)
		if errors.Is(err, errNoKey) && create {
			sk, err = s.newKey(ctx, id)
			if errors.Is(err, cairn.ErrConflict) {
				continue // another writer made the key first: use theirs
			}
		}
		if err != nil {
			return nil, err
		}
		s.remember(id, sk)
		return sk, nil
	}
	return nil, fmt.Errorf("make data key of %s: %w", id, cairn.ErrConflict)
}

// newKey makes a session's data key and stores it wrapped.
func (s *store) newKey(ctx context.Context, id string) (*sessionKey, error) {
	if err := s.admit(ctx, true); err != nil {
		return nil, err
	}
	dek := make([]byte, KeySize)
	if _, err := rand.Read(dek); err != nil {
		return nil, fmt.Errorf("make data key: %w", err)
	}
	sk := &sessionKey{id: dataKeyID(dek), dek: dek}
	if err := s.keys.Create(ctx, cairn.SessionMeta{ID: id}); err != nil && !errors.Is(err, cairn.ErrExists) {
		return nil, fmt.Errorf("store data key of %s: %w", id, err)
	}
	if err := s.appendWrapping(ctx, id, sk, 0); err != nil {
		return nil, err
	}
	return sk, nil
}

// appendWrapping stores sk's data key wrapped by the keyring's current key
// after seq expect of the key session.
func (s *store) appendWrapping(ctx context.Context, id string, sk *sessionKey, expect int64) error {
	kid, sealed, err := s.ring.wrap(sk.dek, keyAAD(s.ns, id, sk.id))
	if err != nil {
		return fmt.Errorf("wrap data key of %s: %w", id, err)
	}
	payload, _ := json.Marshal(keyRecord{KID: kid, DataKey: sk.id, Wrapped: base64.StdEncoding.EncodeToString(sealed)})
	e := cairn.MustEvent(cairn.KindCustom, keyType, cairn.Custom{Type: keyType, Payload: payload})
	e.Seq = expect + 1
	if err := s.keys.Append(ctx, id, expect, e); err != nil {
		return fmt.Errorf("store data key of %s: %w", id, err)
	}
	sk.kid, sk.lastSeq = kid, expect+1
	return nil
}

// remember caches a session's data key; forget drops it.
func (s *store) remember(id string, sk *sessionKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cache) >= maxCached {
		clear(s.cache)
	}
	s.cache[id] = sk
}

func (s *store) forget(id string) {
	s.mu.Lock()
	delete(s.cache, id)
	s.mu.Unlock()
}

// maxCached bounds the cache of opened data keys.
const maxCached = 4096
