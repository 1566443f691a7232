package crypt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/text"
)

// sealEvent returns e with its data sealed by the session's data key.
func (s *store) sealEvent(sk *sessionKey, id string, e cairn.Event) (cairn.Event, error) {
	if e.Kind == cairn.KindMemoryReset {
		return e, nil // its data is always {}: nothing to hide
	}
	sealed, err := seal(sk.dek, e.Data, eventAAD(s.ns, id, e))
	if err != nil {
		return e, fmt.Errorf("seal seq %d: %w", e.Seq, err)
	}
	first := ""
	if e.Kind == cairn.KindMessageUser {
		if first, err = s.sealFirst(sk, id, e.Data); err != nil {
			return e, err
		}
	}
	data, ok := shapeOf(e.Kind, makeToken(sk.id, sealed), first, hintsOf(e.Kind, e.Data))
	if !ok {
		return e, fmt.Errorf("seal seq %d: kind %q cannot be sealed", e.Seq, e.Kind)
	}
	e.Data = data
	return e, nil
}

// sealFirst seals the start of a user message's text for listings.
func (s *store) sealFirst(sk *sessionKey, id string, data []byte) (string, error) {
	var m cairn.MessageUser
	_ = json.Unmarshal(data, &m)
	sealed, err := seal(sk.dek, []byte(text.Truncate(m.Text(), maxFirst)), firstAAD(s.ns, id))
	if err != nil {
		return "", fmt.Errorf("seal first message: %w", err)
	}
	return makeToken(sk.id, sealed), nil
}

// openRecord opens a loaded record in place.
func (s *store) openRecord(ctx context.Context, id string, rec *cairn.Record) error {
	var sk *sessionKey
	for retry := true; ; retry = false {
		var err error
		sk, err = s.dataKey(ctx, id, false)
		if errors.Is(err, errNoKey) {
			sk, err = nil, nil // each sealed event says so below
		}
		if err != nil {
			return err
		}
		if !retry || sk == nil || s.sameKey(sk, rec) {
			break
		}
		s.forget(id) // the session was made again since: read its key again
	}
	for i, e := range rec.Events {
		opened, err := s.openEvent(sk, id, e)
		if err != nil {
			return err
		}
		rec.Events[i] = opened
	}
	if rec.Info.FirstMessage != "" {
		if sk == nil {
			return fmt.Errorf("first message: %w", noKey(id))
		}
		first, err := s.openFirstWith(sk, id, rec.Info.FirstMessage)
		if err != nil {
			return err
		}
		rec.Info.FirstMessage = first
	}
	return nil
}

// sameKey reports whether every sealed event of rec names sk.
func (s *store) sameKey(sk *sessionKey, rec *cairn.Record) bool {
	for _, e := range rec.Events {
		if tok, _, _, ok := tokensOf(e.Kind, e.Data); ok {
			if dkid, _, _ := parseToken(tok); dkid != sk.id {
				return false
			}
		}
	}
	return true
}

func noKey(id string) error {
	return fmt.Errorf("%w: session %s has no data key: it was deleted, or the store's key namespace is gone", ErrUnknownKey, id)
}

// openEvent returns e with its data opened.
func (s *store) openEvent(sk *sessionKey, id string, e cairn.Event) (cairn.Event, error) {
	where := fmt.Sprintf("session %s seq %d (%s)", id, e.Seq, e.Kind)
	if e.Kind == cairn.KindMemoryReset {
		if !emptyObject(e.Data) {
			return e, fmt.Errorf("%w: %s: data is not {}", ErrTampered, where)
		}
		return e, nil
	}
	tok, first, h, ok := tokensOf(e.Kind, e.Data)
	if !ok {
		return e, fmt.Errorf("%w: %s is not encrypted; refusing it", ErrPlaintext, where)
	}
	if sk == nil {
		return e, fmt.Errorf("%s: %w", where, noKey(id))
	}
	dkid, sealed, _ := parseToken(tok)
	if dkid != sk.id {
		return e, fmt.Errorf("%w: %s is sealed by data key %s, the session's is %s", ErrTampered, where, dkid, sk.id)
	}
	plain, err := open(sk.dek, sealed, eventAAD(s.ns, id, e))
	if err != nil {
		return e, fmt.Errorf("%w: %s does not decrypt: changed, or moved from another session or position", ErrTampered, where)
	}
	if want, _ := shapeOf(e.Kind, tok, first, hintsOf(e.Kind, plain)); !sameJSON(want, e.Data) || h != hintsOf(e.Kind, plain) {
		return e, fmt.Errorf("%w: %s: its clear fields were changed", ErrTampered, where)
	}
	e.Data = plain
	return e, nil
}

// openFirst opens a listed first message.
func (s *store) openFirst(ctx context.Context, id, tok string) (string, error) {
	sk, err := s.dataKey(ctx, id, false)
	if err != nil {
		return "", err
	}
	return s.openFirstWith(sk, id, tok)
}

func (s *store) openFirstWith(sk *sessionKey, id, tok string) (string, error) {
	dkid, sealed, ok := parseToken(tok)
	if !ok {
		return "", fmt.Errorf("%w: session %s: first message is not encrypted", ErrPlaintext, id)
	}
	if dkid != sk.id {
		return "", fmt.Errorf("%w: session %s: first message is sealed by data key %s, the session's is %s", ErrTampered, id, dkid, sk.id)
	}
	plain, err := open(sk.dek, sealed, firstAAD(s.ns, id))
	if err != nil {
		return "", fmt.Errorf("%w: session %s: first message does not decrypt", ErrTampered, id)
	}
	return string(plain), nil
}
