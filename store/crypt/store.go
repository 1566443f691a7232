package crypt

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cairnhq/cairn"
)

// Store encrypts the events of the store it wraps. See the package
// documentation for what is sealed and what stays clear.
type Store struct {
	inner  cairn.Store
	keys   cairn.Store // nil without a keyring
	ring   *Keyring    // nil: refuse encrypted sessions, pass the rest
	ns     string
	limits cairn.Limits

	mu    sync.Mutex
	cache map[string]*sessionKey
}

var (
	_ cairn.Store   = (*Store)(nil)
	_ cairn.Sweeper = (*Store)(nil)
)

// Options configure Wrap.
type Options struct {
	// Keyring holds the master keys. Nil makes a guard: a store that
	// passes unencrypted sessions through and refuses encrypted ones with
	// ErrEncrypted, so that a missing key is an error, not ciphertext.
	Keyring *Keyring
	// Keys is the store that holds the wrapped data keys: the same backend
	// opened on KeyNamespace(Namespace) without a TTL. Required with a
	// keyring.
	Keys cairn.Store
	// Namespace is the inner store's namespace; it is bound into every
	// sealed value. Empty means cairn.DefaultNamespace.
	Namespace string
	// Limits bound the events before they are sealed, as the inner
	// store's limits would; open the inner store with InnerLimits of them.
	Limits cairn.Limits
}

// Wrap returns a store that seals every event before it reaches inner and
// opens it on the way back. Closing it closes inner and opts.Keys.
func Wrap(inner cairn.Store, opts Options) (*Store, error) {
	if opts.Keyring != nil && opts.Keys == nil {
		return nil, errors.New("crypt: a keyring needs a key store")
	}
	if opts.Namespace == "" {
		opts.Namespace = cairn.DefaultNamespace
	}
	return &Store{inner: inner, keys: opts.Keys, ring: opts.Keyring, ns: opts.Namespace,
		limits: opts.Limits.WithDefaults(), cache: map[string]*sessionKey{}}, nil
}

// InnerLimits returns the limits to open an inner store with so that it
// takes the sealed form of every event that l allows: sealing adds a third
// (base64) and a few hundred bytes.
func InnerLimits(l cairn.Limits) cairn.Limits {
	l = l.WithDefaults()
	l.MaxEventBytes = l.MaxEventBytes/3*4 + 1024
	return l
}

// Open opens the store at rawURL twice, for the sessions and for their
// keys, and wraps it. A nil ring opens a guard (see Options.Keyring).
func Open(ctx context.Context, rawURL string, opts cairn.StoreOptions, ring *Keyring) (*Store, error) {
	ns := opts.Namespace
	if ns == "" {
		ns = cairn.DefaultNamespace
	}
	wrapped := Options{Keyring: ring, Namespace: ns, Limits: opts.Limits}
	inner := opts
	if ring != nil {
		inner.Limits = InnerLimits(opts.Limits)
	}
	s, err := cairn.Open(ctx, rawURL, inner)
	if err != nil {
		return nil, err
	}
	if ring != nil {
		ko := cairn.StoreOptions{Namespace: KeyNamespace(ns), Now: opts.Now}
		if wrapped.Keys, err = cairn.Open(ctx, rawURL, ko); err != nil {
			s.Close()
			return nil, fmt.Errorf("open key namespace: %w", err)
		}
	}
	return Wrap(s, wrapped)
}

// Inner returns the wrapped store.
func (s *Store) Inner() cairn.Store { return s.inner }

// Create implements cairn.Store. It also drops a key left by an earlier
// session of the same ID (one that expired), so that the new session gets
// a data key of its own.
func (s *Store) Create(ctx context.Context, meta cairn.SessionMeta) error {
	if err := s.inner.Create(ctx, meta); err != nil {
		return err
	}
	if s.ring != nil {
		s.forget(meta.ID)
		if err := s.keys.Delete(ctx, meta.ID); err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return fmt.Errorf("create %s: drop old data key: %w", meta.ID, err)
		}
	}
	return nil
}

// Append implements cairn.Store: it checks the events as the inner store
// would, seals them with the session's data key (made on the first append)
// and appends the sealed events in one call.
func (s *Store) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	if s.ring == nil {
		return s.inner.Append(ctx, id, expectSeq, events...)
	}
	return s.append(ctx, id, expectSeq, events, func(sealed []cairn.Event) error {
		return s.inner.Append(ctx, id, expectSeq, sealed...)
	})
}

// append seals events and hands them to write.
func (s *Store) append(ctx context.Context, id string, expectSeq int64, events []cairn.Event, write func([]cairn.Event) error) error {
	if err := cairn.CheckAppend(s.limits, id, expectSeq, events); err != nil {
		return err
	}
	sk, err := s.dataKey(ctx, id, true)
	if err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	sealed := make([]cairn.Event, len(events))
	for i, e := range events {
		if sealed[i], err = s.sealEvent(sk, id, e); err != nil {
			return fmt.Errorf("append %s: %w", id, err)
		}
	}
	err = write(sealed)
	if errors.Is(err, cairn.ErrNotFound) {
		// No such session: drop a key that this call may have made.
		s.forget(id)
		if _, lerr := s.inner.Load(ctx, id, 1<<62); errors.Is(lerr, cairn.ErrNotFound) {
			_ = s.keys.Delete(ctx, id)
		}
	}
	return err
}

// Load implements cairn.Store: it opens every event and the first
// message, and refuses, with the session, seq and reason, any that is not
// sealed, does not authenticate or is sealed under a key it lacks.
func (s *Store) Load(ctx context.Context, id string, fromSeq int64) (*cairn.Record, error) {
	rec, err := s.inner.Load(ctx, id, fromSeq)
	if err != nil {
		return nil, err
	}
	if s.ring == nil {
		return rec, s.guard(id, rec)
	}
	if err := s.openRecord(ctx, id, rec); err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	return rec, nil
}

// List implements cairn.Store. Listing never fails on content: a first
// message that does not open (no key, another key, not sealed) is shown
// empty, and loading that session says why.
func (s *Store) List(ctx context.Context, opts cairn.ListOptions) (*cairn.ListPage, error) {
	page, err := s.inner.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i := range page.Sessions {
		info := &page.Sessions[i]
		if info.FirstMessage == "" {
			continue
		}
		if s.ring == nil {
			if isToken(info.FirstMessage) {
				info.FirstMessage = ""
			}
			continue
		}
		first, err := s.openFirst(ctx, info.ID, info.FirstMessage)
		if err != nil {
			first = ""
		}
		info.FirstMessage = first
	}
	return page, nil
}

// Delete implements cairn.Store. It deletes the session's data key first,
// so that whatever the backend keeps of the session afterwards (free
// pages, a write-ahead log, dead rows, backups) is ciphertext whose key is
// gone from the live store.
func (s *Store) Delete(ctx context.Context, id string) error {
	if s.ring != nil {
		s.forget(id)
		if err := s.keys.Delete(ctx, id); err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return fmt.Errorf("delete %s: data key: %w", id, err)
		}
	}
	return s.inner.Delete(ctx, id)
}

// Sweep implements cairn.Sweeper: it sweeps the inner store if it can,
// then deletes the data keys of sessions that no longer exist (expired
// ones, which backends with native expiry drop without Delete).
func (s *Store) Sweep(ctx context.Context) (int, error) {
	n := 0
	if sw, ok := s.inner.(cairn.Sweeper); ok {
		var err error
		if n, err = sw.Sweep(ctx); err != nil {
			return n, err
		}
	}
	if s.ring == nil {
		return n, nil
	}
	ids, err := allIDs(ctx, s.keys)
	if err != nil {
		return n, fmt.Errorf("sweep data keys: %w", err)
	}
	for _, id := range ids {
		if _, err := s.inner.Load(ctx, id, 1<<62); !errors.Is(err, cairn.ErrNotFound) {
			continue
		}
		s.forget(id)
		if err := s.keys.Delete(ctx, id); err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return n, fmt.Errorf("sweep data key of %s: %w", id, err)
		}
	}
	return n, nil
}

// Close implements cairn.Store.
func (s *Store) Close() error {
	err := s.inner.Close()
	if s.keys != nil {
		err = errors.Join(err, s.keys.Close())
	}
	return err
}

// allIDs lists every session of a store.
func allIDs(ctx context.Context, st cairn.Store) ([]string, error) {
	var ids []string
	opts := cairn.ListOptions{Limit: 500}
	for {
		page, err := st.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, info := range page.Sessions {
			ids = append(ids, info.ID)
		}
		if page.Next == "" {
			return ids, nil
		}
		opts.Cursor = page.Next
	}
}
