package crypt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
)

// markerID is the ID of the marker session in the key namespace. No
// session of the namespace may take it (Create refuses it).
//
// The marker is that of an encrypted namespace. Before the first event of
// a namespace is sealed, the encrypting store records in the key namespace
// that the namespace holds encrypted sessions, and under which master
// keys: a session of ID markerID holding one custom event of type
// markerType per master key, with the key's ID and fingerprint. A process
// without a key finds the marker and refuses the namespace
// (EncryptedError) rather than reading ciphertext or adding plaintext; a
// process whose key the marker does not name may not write there
// (WrongKeyError), and only Rekey adds a key to it. The marker is never
// deleted: once a namespace has held encrypted sessions, it is an
// encrypted namespace.
const markerID = "_cairn_namespace_encrypted"

// markerType is the custom type of a marker record.
const markerType = "cairn.encrypted"

// markerRecord is the payload of a marker record.
type markerRecord struct {
	KID string `json:"kid"` // a master key that wraps data keys of the namespace
	// FP is the key's fingerprint (Key.Fingerprint), so that another key
	// given the same ID is told apart; "" in records written before it
	// was recorded, which name the key by its ID alone.
	FP string `json:"fp,omitempty"`
}

// readMarker returns the records of the marker, one per master key, in
// the order they were recorded, and the marker's last seq; none when there
// is no marker.
func readMarker(ctx context.Context, keys cairn.Store) ([]markerRecord, int64, error) {
	rec, err := keys.Load(ctx, markerID, 0)
	if errors.Is(err, cairn.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the encryption marker: %w", err)
	}
	var recs []markerRecord
	for _, e := range rec.Events {
		var c cairn.Custom
		var m markerRecord
		if e.Kind != cairn.KindCustom || json.Unmarshal(e.Data, &c) != nil || c.Type != markerType ||
			json.Unmarshal(c.Payload, &m) != nil || m.KID == "" {
			return nil, 0, fmt.Errorf("%w: the encryption marker's seq %d is malformed", ErrTampered, e.Seq)
		}
		if !slices.Contains(recs, m) {
			recs = append(recs, m)
		}
	}
	return recs, rec.Info.LastSeq, nil
}

// markerKeys returns the key IDs of marker records, each once.
func markerKeys(recs []markerRecord) []string {
	var kids []string
	for _, m := range recs {
		if !slices.Contains(kids, m.KID) {
			kids = append(kids, m.KID)
		}
	}
	return kids
}

// names reports whether the marker records name key k: a record of its ID
// with its fingerprint, or with none (a record written before
// fingerprints were).
func names(recs []markerRecord, k Key) bool {
	return slices.ContainsFunc(recs, func(m markerRecord) bool {
		return m.KID == k.ID && (m.FP == "" || m.FP == k.Fingerprint())
	})
}

// namespaceKeys returns the master key IDs under which the namespace
// holds encrypted sessions: those its marker names or, for a namespace
// encrypted before markers were written, those of a key session found in
// its key namespace. None means the namespace holds no encrypted session.
func namespaceKeys(ctx context.Context, keys cairn.Store) ([]string, error) {
	recs, _, err := readMarker(ctx, keys)
	if err != nil || len(recs) > 0 {
		return markerKeys(recs), err
	}
	return keySessionKeys(ctx, keys)
}

// keySessionKeys returns the master key IDs of the first key session
// found in the key namespace: the keys of a namespace encrypted before
// markers were written. A key session whose records do not say is
// "(unknown)".
func keySessionKeys(ctx context.Context, keys cairn.Store) ([]string, error) {
	page, err := keys.List(ctx, cairn.ListOptions{Limit: 2})
	if err != nil {
		return nil, fmt.Errorf("look for data keys: %w", err)
	}
	var kids []string
	for _, info := range page.Sessions {
		if info.ID == markerID {
			continue
		}
		rec, err := keys.Load(ctx, info.ID, 0)
		if errors.Is(err, cairn.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("look for data keys: %w", err)
		}
		for _, e := range rec.Events {
			var c cairn.Custom
			var kr keyRecord
			if json.Unmarshal(e.Data, &c) == nil && json.Unmarshal(c.Payload, &kr) == nil && kr.KID != "" && !slices.Contains(kids, kr.KID) {
				kids = append(kids, kr.KID)
			}
		}
		if len(kids) == 0 {
			kids = []string{unknownKey}
		}
		return kids, nil
	}
	return nil, nil
}

// unknownKey stands for the master key of a key session whose records do
// not name one.
const unknownKey = "(unknown)"

// admit returns nil when the keyring's current key may write in the
// namespace: the marker names it, or the namespace holds no encrypted
// session yet. Otherwise it returns a *WrongKeyError: a key that is not
// the namespace's is refused for writes as it is for reads, and only
// Rekey adds a key to a namespace.
//
// With mark, which the first data key of a namespace asks for, a
// namespace with no marker gets one naming the current key. A namespace
// encrypted before markers were written gets its marker at the first
// write by one of its keys. Once the marker names the current key, the
// store remembers it and admit costs nothing.
func (s *store) admit(ctx context.Context, mark bool) error {
	s.mu.Lock()
	done := s.marked
	s.mu.Unlock()
	if done {
		return nil
	}
	cur := s.ring.current
	return s.addToMarker(ctx, func(recs []markerRecord) (bool, error) {
		if len(recs) > 0 {
			return false, s.wrongKey(recs, nil)
		}
		// No marker: a namespace never sealed, or sealed before markers.
		kids, err := keySessionKeys(ctx, s.keys)
		if err != nil {
			return false, err
		}
		kids = slices.DeleteFunc(kids, func(k string) bool { return k == unknownKey })
		switch {
		case len(kids) > 0 && !slices.Contains(kids, cur.ID):
			return false, s.wrongKey(nil, kids)
		case len(kids) == 0 && !mark:
			return false, nil // the first sealed event marks it
		}
		return true, nil
	})
}

// addToMarker adds the keyring's current key to the namespace's marker,
// unless the marker names it already. decide, given the marker's records
// (none: no marker), says whether to add it, or why not (an error): it
// runs again on the marker as it is when another writer changed it
// meanwhile. Once the marker names the key, the store remembers it.
func (s *store) addToMarker(ctx context.Context, decide func(recs []markerRecord) (bool, error)) error {
	for try := 0; try < 5; try++ {
		recs, last, err := readMarker(ctx, s.keys)
		if err != nil {
			return err
		}
		if names(recs, s.ring.current) {
			s.setMarked()
			return nil
		}
		if add, err := decide(recs); err != nil || !add {
			return err
		}
		err = s.appendMarker(ctx, last)
		if errors.Is(err, cairn.ErrConflict) {
			continue // another writer marked it meanwhile: read again
		}
		if err != nil {
			return err
		}
		s.setMarked()
		return nil
	}
	return fmt.Errorf("write the encryption marker: %w", cairn.ErrConflict)
}

// markForRekey adds the keyring's current key to the marker of a
// namespace that holds encrypted sessions, as Rekey does before it wraps
// data keys by that key: the one path by which a namespace gains a key. The
// keyring must hold one of the keys the namespace names (its current
// key), and the current key must not share its ID with another key of the
// namespace. A namespace that holds no encrypted session is left alone.
func (s *store) markForRekey(ctx context.Context) error {
	cur := s.ring.current
	return s.addToMarker(ctx, func(recs []markerRecord) (bool, error) {
		held := false
		if len(recs) > 0 {
			for _, k := range s.ring.byID {
				held = held || names(recs, k)
			}
			if slices.ContainsFunc(recs, func(m markerRecord) bool { return m.KID == cur.ID }) {
				return false, fmt.Errorf("%w: the new key's ID %s is that of another key of namespace %s (fingerprint %s): give the new key an ID of its own",
					ErrWrongKey, cur.ID, s.ns, cur.Fingerprint())
			}
		} else {
			kids, err := keySessionKeys(ctx, s.keys)
			if err != nil {
				return false, err
			}
			if len(kids) == 0 {
				return false, nil // nothing sealed: nothing to rekey
			}
			for _, id := range kids {
				_, ok := s.ring.byID[id]
				held = held || ok || id == unknownKey
			}
			recs = markerRecordsOf(kids)
		}
		if !held {
			return false, &WrongKeyError{Namespace: s.ns, Key: strings.Join(s.ring.IDs(), ", "), KeyIDs: markerKeys(recs), Rekey: true}
		}
		return true, nil
	})
}

func markerRecordsOf(kids []string) []markerRecord {
	recs := make([]markerRecord, len(kids))
	for i, k := range kids {
		recs[i] = markerRecord{KID: k}
	}
	return recs
}

// appendMarker records the keyring's current key in the marker after its
// seq last, creating the marker when last is 0. It returns
// cairn.ErrConflict when another writer appended first.
func (s *store) appendMarker(ctx context.Context, last int64) error {
	if last == 0 {
		if err := s.keys.Create(ctx, cairn.SessionMeta{ID: markerID}); err != nil && !errors.Is(err, cairn.ErrExists) {
			return fmt.Errorf("write the encryption marker: %w", err)
		}
	}
	cur := s.ring.current
	payload, _ := json.Marshal(markerRecord{KID: cur.ID, FP: cur.Fingerprint()})
	e := cairn.MustEvent(cairn.KindCustom, markerType, cairn.Custom{Type: markerType, Payload: payload})
	e.Seq = last + 1
	err := s.keys.Append(ctx, markerID, last, e)
	if err != nil && !errors.Is(err, cairn.ErrConflict) {
		return fmt.Errorf("write the encryption marker: %w", err)
	}
	return err
}

// setMarked remembers that the marker names the keyring's current key.
func (s *store) setMarked() {
	s.mu.Lock()
	s.marked = true
	s.mu.Unlock()
}

// wrongKey returns the *WrongKeyError of the keyring's current key in a
// namespace whose marker records are recs (or, with no marker, whose key
// sessions name kids).
func (s *store) wrongKey(recs []markerRecord, kids []string) error {
	cur := s.ring.current
	e := &WrongKeyError{Namespace: s.ns, Key: cur.ID, Fingerprint: cur.Fingerprint(), KeyIDs: kids}
	if recs != nil {
		e.KeyIDs = markerKeys(recs)
		for _, m := range recs {
			if m.KID == cur.ID && m.FP != "" {
				e.SameID = true
			}
		}
	}
	return e
}

// EncryptedError is returned when a store opened without a key finds that
// its namespace holds encrypted sessions. It wraps ErrEncrypted and names
// the master keys that the namespace's data keys are wrapped by.
type EncryptedError struct {
	Namespace string
	KeyIDs    []string
}

// Error names the namespace and its master key IDs.
func (e *EncryptedError) Error() string {
	return fmt.Sprintf("namespace %s holds encrypted sessions (master key %s) and no encryption key is configured",
		e.Namespace, joinKeys(e.KeyIDs))
}

// Unwrap returns ErrEncrypted.
func (e *EncryptedError) Unwrap() error { return ErrEncrypted }

// WrongKeyError is returned by a write (Create, Append, a snapshot, a
// lease, Delete, Sweep, Repair) through a store whose key is not one of
// its namespace's: the namespace holds sessions encrypted under other
// master keys, and writing would add a key to it, which only Rekey does.
// Rekey returns it too when the keyring holds none of the namespace's
// keys. It wraps ErrWrongKey.
type WrongKeyError struct {
	Namespace   string
	Key         string   // the store's key: the keyring's current key (for Rekey, its keys)
	Fingerprint string   // the current key's fingerprint (Key.Fingerprint)
	KeyIDs      []string // the namespace's master keys
	// SameID is set when a key of the namespace has the current key's
	// ID but another fingerprint: another key given the same ID.
	SameID bool
	// Rekey is set for the error of Rekey.
	Rekey bool
}

// Error names the namespace, its keys and the store's key, and says that
// adding a key to a namespace is what rekey does.
func (e *WrongKeyError) Error() string {
	if e.Rekey {
		return fmt.Sprintf("namespace %s is encrypted under master key %s, and the keyring (%s) holds none of them: rekey needs the namespace's key beside the new one",
			e.Namespace, joinKeys(e.KeyIDs), e.Key)
	}
	which := "key " + e.Key
	if e.SameID {
		which = "another key of the same ID, " + e.Key
	}
	return fmt.Sprintf("namespace %s is encrypted under master key %s, not under %s (fingerprint %s): a key is added to a namespace only by rekey (`cairn sessions rekey --new-key FILE`, run with the namespace's key)",
		e.Namespace, joinKeys(e.KeyIDs), which, e.Fingerprint)
}

// Unwrap returns ErrWrongKey.
func (e *WrongKeyError) Unwrap() error { return ErrWrongKey }

func joinKeys(ids []string) string {
	switch len(ids) {
	case 0:
		return "unknown"
	case 1:
		return ids[0]
	}
	s := ids[0]
	for _, id := range ids[1 : len(ids)-1] {
		s += ", " + id
	}
	return s + " or " + ids[len(ids)-1]
}
