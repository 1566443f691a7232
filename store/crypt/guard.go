package crypt

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
)

// guardNamespace returns an *EncryptedError when the store is a guard
// with a key store and the namespace's marker says it holds encrypted
// sessions. It reads the marker once; Create reads it again.
func (s *store) guardNamespace(ctx context.Context) error {
	if s.ring != nil || s.keys == nil {
		return nil
	}
	s.mu.Lock()
	known, err := s.nsKnown, s.nsErr
	s.mu.Unlock()
	if known {
		return err
	}
	kids, err := namespaceKeys(ctx, s.keys)
	if err != nil {
		return err
	}
	if len(kids) > 0 {
		err = &EncryptedError{Namespace: s.ns, KeyIDs: kids}
	}
	s.mu.Lock()
	s.nsKnown, s.nsErr = true, err
	s.mu.Unlock()
	return err
}

// guard refuses a record holding sealed events: the store was opened
// without the key.
//
// A guard is the store without a keyring: it passes unencrypted sessions
// through and refuses encrypted ones. Open refuses a namespace whose
// marker says it holds encrypted sessions; the guard also refuses each
// sealed session it meets, for a namespace encrypted since it was opened,
// or whose marker is gone.
func (s *store) guard(id string, rec *cairn.Record) error {
	if err := CheckUnsealed(id, rec.Events); err != nil {
		return fmt.Errorf("load %s: %w", id, err)
	}
	if isToken(rec.Info.FirstMessage) {
		rec.Info.FirstMessage = ""
	}
	s.markChecked(id)
	return nil
}

// guardAppend refuses an append to a session whose last events are
// sealed. It reads them at the first append to each session that the guard
// has not read or created, so appending stays one round trip after that.
func (s *store) guardAppend(ctx context.Context, id string, expectSeq int64) error {
	if expectSeq < 1 {
		return nil
	}
	s.mu.Lock()
	done := s.checked[id]
	s.mu.Unlock()
	if done {
		return nil
	}
	rec, err := s.inner.Load(ctx, id, max(1, expectSeq-1))
	if errors.Is(err, cairn.ErrNotFound) {
		return nil // the append says so
	}
	if err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	if err := CheckUnsealed(id, rec.Events); err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	s.markChecked(id)
	return nil
}

// markChecked remembers that a session was found unsealed.
func (s *store) markChecked(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.checked) >= maxCached {
		clear(s.checked)
	}
	s.checked[id] = true
}
