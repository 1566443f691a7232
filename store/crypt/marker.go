package crypt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/cairnhq/cairn"
)

// markerID is the ID of the marker session in the key namespace. No
// session of the namespace may take it (Create refuses it).
//
// The marker is that of an encrypted namespace. Before the first event of
// a namespace is sealed, the encrypting store records in the key namespace
// that the namespace holds encrypted sessions, and under which master
// keys: a session of ID markerID holding one custom event of type
// markerType per master key ID. A process without a key finds the marker
// and refuses the namespace (EncryptedError) rather than reading
// ciphertext or adding plaintext. The marker is never deleted: once a
// namespace has held encrypted sessions, it is an encrypted namespace.
const markerID = "_cairn_namespace_encrypted"

// markerType is the custom type of a marker record.
const markerType = "cairn.encrypted"

// markerRecord is the payload of a marker record.
type markerRecord struct {
	KID string `json:"kid"` // a master key that wraps data keys of the namespace
}

// readMarker returns the master key IDs the marker names, in the order
// they were recorded, and the marker's last seq; none when there is no
// marker.
func readMarker(ctx context.Context, keys cairn.Store) ([]string, int64, error) {
	rec, err := keys.Load(ctx, markerID, 0)
	if errors.Is(err, cairn.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the encryption marker: %w", err)
	}
	var kids []string
	for _, e := range rec.Events {
		var c cairn.Custom
		var m markerRecord
		if e.Kind != cairn.KindCustom || json.Unmarshal(e.Data, &c) != nil || c.Type != markerType ||
			json.Unmarshal(c.Payload, &m) != nil || m.KID == "" {
			return nil, 0, fmt.Errorf("%w: the encryption marker's seq %d is malformed", ErrTampered, e.Seq)
		}
		if !slices.Contains(kids, m.KID) {
			kids = append(kids, m.KID)
		}
	}
	return kids, rec.Info.LastSeq, nil
}

// namespaceKeys returns the master key IDs under which the namespace
// holds encrypted sessions: those its marker names or, for a namespace
// encrypted before markers were written, those of a key session found in
// its key namespace. None means the namespace holds no encrypted session.
func namespaceKeys(ctx context.Context, keys cairn.Store) ([]string, error) {
	kids, _, err := readMarker(ctx, keys)
	if err != nil || len(kids) > 0 {
		return kids, err
	}
	page, err := keys.List(ctx, cairn.ListOptions{Limit: 2})
	if err != nil {
		return nil, fmt.Errorf("look for data keys: %w", err)
	}
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
			kids = []string{"(unknown)"}
		}
		return kids, nil
	}
	return nil, nil
}

// ensureMarked records, once per store, that the namespace holds sessions
// sealed under the keyring's current key: before the first data key is
// made, and by Rekey.
func (s *store) ensureMarked(ctx context.Context) error {
	s.mu.Lock()
	done := s.marked
	s.mu.Unlock()
	if done {
		return nil
	}
	kid := s.ring.Current()
	for try := 0; ; try++ {
		if try == 5 {
			return fmt.Errorf("write the encryption marker: %w", cairn.ErrConflict)
		}
		kids, last, err := readMarker(ctx, s.keys)
		if err != nil {
			return err
		}
		if slices.Contains(kids, kid) {
			break
		}
		if last == 0 {
			if err := s.keys.Create(ctx, cairn.SessionMeta{ID: markerID}); err != nil && !errors.Is(err, cairn.ErrExists) {
				return fmt.Errorf("write the encryption marker: %w", err)
			}
		}
		payload, _ := json.Marshal(markerRecord{KID: kid})
		e := cairn.MustEvent(cairn.KindCustom, markerType, cairn.Custom{Type: markerType, Payload: payload})
		e.Seq = last + 1
		err = s.keys.Append(ctx, markerID, last, e)
		if errors.Is(err, cairn.ErrConflict) {
			continue // another writer marked it meanwhile: read again
		}
		if err != nil {
			return fmt.Errorf("write the encryption marker: %w", err)
		}
		break
	}
	s.mu.Lock()
	s.marked = true
	s.mu.Unlock()
	return nil
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
