package crypt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Store is an encrypting store: a cairn.Store that seals every event before
// it reaches the store it wraps and opens it on the way back. See the
// package documentation for what is sealed and what stays clear.
//
// A Store has exactly the optional abilities of the store it wraps: it is a
// cairn.Leaser (whose fenced appends are sealed like Append) when that
// store is one, a driver.Claimer when that store is one too, a
// driver.Checker, and a cairn.Snapshotter (whose snapshots are sealed like
// events), so that a caller looking for those abilities finds them
// whether or not the store is encrypted. It is always a driver.Sweeper: Sweep sweeps the wrapped
// store if it can and deletes the data keys of sessions that are gone.
type Store interface {
	cairn.Store
	driver.Sweeper

	// Inner returns the wrapped store, which holds the sealed events.
	Inner() cairn.Store

	// Searcher returns the wrapped store's search (driver.Searcher) for a
	// guard, whose sessions are in clear, and nil for an encrypting store,
	// whose events reach the store sealed: no index holds their words.
	// sessions.Search searches through it.
	Searcher() driver.Searcher

	// Rekey wraps every session's data key by the keyring's current
	// master key; see (*Keyring).Current and the package documentation.
	Rekey(ctx context.Context, progress func(done, total int)) (RekeyResult, error)

	// Inspect reads a session as it is stored and says which of its events
	// are not sealed; see Inspection.
	Inspect(ctx context.Context, id string) (*Inspection, error)

	// Repair rewrites a session whose events are not all sealed so that
	// every one is; see RepairOptions.
	Repair(ctx context.Context, id string, opts RepairOptions) (*RepairResult, error)

	// CheckSessions reads up to limit sessions (0: every one) with the
	// keyring and reports those that do not open or hold events in
	// clear; see (*store).CheckSessions.
	CheckSessions(ctx context.Context, limit int) (*driver.CheckReport, error)
}

// store is the encrypting store; Wrap returns it, or a type that embeds it
// and adds the abilities of the wrapped store (lease.go).
type store struct {
	inner  cairn.Store
	keys   cairn.Store // the key namespace; nil for a guard made without one
	ring   *Keyring    // nil: a guard, which refuses encrypted sessions
	ns     string
	limits cairn.Limits

	mu      sync.Mutex
	cache   map[string]*sessionKey
	marked  bool            // the key namespace's marker names ring.Current()
	checked map[string]bool // guard: sessions found unsealed by a first append
	nsErr   error           // guard: the namespace is encrypted (an *EncryptedError)
	nsKnown bool            // guard: nsErr says what the marker says
}

var (
	_ Store          = (*store)(nil)
	_ driver.Sweeper = (*store)(nil)
)

// Options configure Wrap.
type Options struct {
	// Keyring holds the master keys. Nil makes a guard: a store that
	// passes unencrypted sessions through and refuses encrypted ones, so
	// that a missing key is an error, not ciphertext.
	Keyring *Keyring
	// Keys is the store that holds the wrapped data keys and the marker
	// that says the namespace holds encrypted sessions: the same backend
	// opened on KeyNamespace(Namespace) without a TTL. Required with a
	// keyring. A guard given Keys refuses to create a session in a
	// namespace marked encrypted; without it, it recognises encrypted
	// sessions by their events only.
	Keys cairn.Store
	// Namespace is the inner store's namespace; it is bound into every
	// sealed value. Empty means cairn.DefaultNamespace.
	Namespace string
	// Limits bound the events before they are sealed, as the inner
	// store's limits would; open the inner store with InnerLimits of them.
	Limits cairn.Limits
}

// Wrap returns a store that seals every event before it reaches inner and
// opens it on the way back. It has exactly inner's optional abilities (see
// Store). Closing it closes inner and opts.Keys.
//
// Wrap does not look at the stores: a guard over a namespace that holds
// encrypted sessions refuses each of them as it is read. Open also refuses
// such a namespace at once.
func Wrap(inner cairn.Store, opts Options) (Store, error) {
	s, err := wrap(inner, opts)
	if err != nil {
		return nil, err
	}
	return s.withAbilities(), nil
}

func wrap(inner cairn.Store, opts Options) (*store, error) {
	if opts.Keyring != nil && opts.Keys == nil {
		return nil, errors.New("crypt: a keyring needs a key store")
	}
	if opts.Namespace == "" {
		opts.Namespace = cairn.DefaultNamespace
	}
	return &store{inner: inner, keys: opts.Keys, ring: opts.Keyring, ns: opts.Namespace,
		limits: opts.Limits.WithDefaults(), cache: map[string]*sessionKey{}, checked: map[string]bool{}}, nil
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
// keys, and wraps it.
//
// With a nil ring it opens a guard, and refuses at once, with an
// *EncryptedError naming the master key IDs, a namespace that holds
// encrypted sessions: a process without the key can then neither read
// them as ciphertext nor add plaintext to them.
func Open(ctx context.Context, rawURL string, opts cairn.StoreOptions, ring *Keyring) (Store, error) {
	ns := opts.Namespace
	if ns == "" {
		ns = cairn.DefaultNamespace
	}
	wrapped := Options{Keyring: ring, Namespace: ns, Limits: opts.Limits}
	inner := opts
	if ring != nil {
		inner.Limits = InnerLimits(opts.Limits)
	}
	// The key namespace first: a guard refuses an encrypted namespace
	// before it opens, or touches, the namespace itself.
	ko := cairn.StoreOptions{Namespace: KeyNamespace(ns), Now: opts.Now}
	if ring == nil && driver.ValidateNamespace(ko.Namespace) != nil {
		// A namespace too long to have a key namespace was never
		// encrypted: a guard without a key store.
		s, err := cairn.Open(ctx, rawURL, inner)
		if err != nil {
			return nil, err
		}
		return Wrap(s, wrapped)
	}
	var err error
	if wrapped.Keys, err = cairn.Open(ctx, rawURL, ko); err != nil {
		return nil, fmt.Errorf("open key namespace: %w", err)
	}
	if ring == nil {
		kids, err := namespaceKeys(ctx, wrapped.Keys)
		if err == nil && len(kids) > 0 {
			err = &EncryptedError{Namespace: ns, KeyIDs: kids}
		}
		if err != nil {
			wrapped.Keys.Close()
			return nil, err
		}
	}
	s, err := cairn.Open(ctx, rawURL, inner)
	if err != nil {
		wrapped.Keys.Close()
		return nil, err
	}
	st, err := wrap(s, wrapped)
	if err != nil {
		s.Close()
		wrapped.Keys.Close()
		return nil, err
	}
	st.nsKnown = true // a guard's namespace was checked above
	return st.withAbilities(), nil
}

// Inner returns the wrapped store.
func (s *store) Inner() cairn.Store { return s.inner }

// Searcher implements Store.
func (s *store) Searcher() driver.Searcher {
	if s.ring != nil {
		return nil
	}
	sr, _ := s.inner.(driver.Searcher)
	return sr
}

// Create implements cairn.Store. It also drops a key left by an earlier
// session of the same ID (one that expired), so that the new session gets
// a data key of its own. A guard refuses to create a session in a
// namespace marked encrypted, and a store whose key is not one of the
// namespace's refuses with a *WrongKeyError, as every write of it does.
func (s *store) Create(ctx context.Context, meta cairn.SessionMeta) error {
	if meta.ID == markerID {
		return fmt.Errorf("create %s: %w: the ID is reserved for the marker of an encrypted namespace", meta.ID, cairn.ErrInvalidID)
	}
	if err := s.writable(ctx); err != nil {
		return fmt.Errorf("create %s: %w", meta.ID, err)
	}
	if s.ring == nil && s.keys != nil {
		s.mu.Lock()
		s.nsKnown = false // look again: the namespace may be encrypted since
		s.mu.Unlock()
		if err := s.guardNamespace(ctx); err != nil {
			return fmt.Errorf("create %s: %w", meta.ID, err)
		}
	}
	if err := s.inner.Create(ctx, meta); err != nil {
		return err
	}
	if s.ring != nil {
		s.forget(meta.ID)
		if err := s.keys.Delete(ctx, meta.ID); err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return fmt.Errorf("create %s: drop old data key: %w", meta.ID, err)
		}
	} else {
		s.markChecked(meta.ID)
	}
	return nil
}

// Append implements cairn.Store: it checks the events as the inner store
// would, seals them with the session's data key (made on the first append)
// and appends the sealed events in one call. A retried append (see
// cairn.Store) is recognised by its plaintext, since sealing the same
// events again gives other ciphertext. A guard refuses to append to a
// session whose events are sealed. A store whose key is not one of the
// namespace's refuses (a *WrongKeyError): the first data key of a
// namespace records the key in its marker, and only Rekey adds another.
func (s *store) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	if s.ring == nil {
		if err := s.guardNamespace(ctx); err != nil {
			return fmt.Errorf("append %s: %w", id, err)
		}
		if err := s.guardAppend(ctx, id, expectSeq); err != nil {
			return err
		}
		return s.inner.Append(ctx, id, expectSeq, events...)
	}
	return s.append(ctx, id, expectSeq, events, func(sealed []cairn.Event) error {
		return s.inner.Append(ctx, id, expectSeq, sealed...)
	})
}

// append seals events and hands them to write.
func (s *store) append(ctx context.Context, id string, expectSeq int64, events []cairn.Event, write func([]cairn.Event) error) error {
	if id == markerID {
		return fmt.Errorf("append %s: %w: the ID is reserved for the marker of an encrypted namespace", id, cairn.ErrInvalidID)
	}
	events, err := driver.CheckAppend(s.limits, id, expectSeq, events)
	if err != nil {
		return err
	}
	if err := s.writable(ctx); err != nil {
		return fmt.Errorf("append %s: %w", id, err)
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
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		// No such session: drop a key that this call may have made.
		s.forget(id)
		if _, lerr := s.inner.Stat(ctx, id); errors.Is(lerr, cairn.ErrNotFound) {
			_ = s.keys.Delete(ctx, id)
		}
	case errors.Is(err, cairn.ErrConflict) && s.retried(ctx, id, expectSeq, events):
		return nil
	}
	return err
}

// retried reports whether the session holds exactly events at their
// seqs, whether or not others follow them: an append that already
// happened and is sent again. Only a conflict pays for it.
func (s *store) retried(ctx context.Context, id string, expectSeq int64, events []cairn.Event) bool {
	if expectSeq < 0 {
		return false
	}
	rec, err := s.Load(ctx, id, expectSeq+1)
	if err != nil || len(rec.Events) < len(events) {
		return false
	}
	for i, e := range events {
		got := rec.Events[i]
		if got.V != e.V || got.Seq != e.Seq || !got.At.Equal(e.At) || got.Kind != e.Kind || got.Run != e.Run || !sameJSON(got.Data, e.Data) {
			return false
		}
	}
	return true
}

// Load implements cairn.Store: it opens every event and the first
// message, and refuses, with the session, seq and reason, any that is not
// sealed, does not authenticate or is sealed under a key it lacks. A guard
// refuses a session that holds sealed events (SealedError).
func (s *store) Load(ctx context.Context, id string, fromSeq int64) (*cairn.Record, error) {
	if err := s.guardNamespace(ctx); err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
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
func (s *store) List(ctx context.Context, opts cairn.ListOptions) (*cairn.ListPage, error) {
	if err := s.guardNamespace(ctx); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
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
// A store whose key is not one of the namespace's refuses it (a
// *WrongKeyError), as a guard does.
func (s *store) Delete(ctx context.Context, id string) error {
	if err := s.guardNamespace(ctx); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if err := s.writable(ctx); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if s.ring != nil {
		s.forget(id)
		if err := s.keys.Delete(ctx, id); err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return fmt.Errorf("delete %s: data key: %w", id, err)
		}
	}
	return s.inner.Delete(ctx, id)
}

// CountExpired implements driver.Sweeper: the inner store's count, when it
// can sweep; a store that expires sessions by itself has none waiting.
func (s *store) CountExpired(ctx context.Context) (int, error) {
	if sw, ok := s.inner.(driver.Sweeper); ok {
		return sw.CountExpired(ctx)
	}
	return 0, nil
}

// Sweep implements driver.Sweeper: it sweeps the inner store if it can,
// then deletes the data keys of sessions that no longer exist (expired
// ones, which backends with native expiry drop without Delete). A store
// whose key is not one of the namespace's refuses it.
func (s *store) Sweep(ctx context.Context) (int, error) {
	if err := s.guardNamespace(ctx); err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	if err := s.writable(ctx); err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	n := 0
	if sw, ok := s.inner.(driver.Sweeper); ok {
		var err error
		if n, err = sw.Sweep(ctx); err != nil {
			return n, err
		}
	}
	if s.ring == nil {
		return n, nil
	}
	ids, err := keyIDs(ctx, s.keys)
	if err != nil {
		return n, fmt.Errorf("sweep data keys: %w", err)
	}
	for _, id := range ids {
		if _, err := s.inner.Stat(ctx, id); !errors.Is(err, cairn.ErrNotFound) {
			continue
		}
		s.forget(id)
		if err := s.keys.Delete(ctx, id); err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return n, fmt.Errorf("sweep data key of %s: %w", id, err)
		}
	}
	return n, nil
}

// writable returns nil when the store may write in its namespace: always
// for a guard (whose checks are its own), and with a keyring when its
// current key is one of the namespace's (see admit).
func (s *store) writable(ctx context.Context) error {
	if s.ring == nil {
		return nil
	}
	return s.admit(ctx, false)
}

// Close implements cairn.Store.
func (s *store) Close() error {
	err := s.inner.Close()
	if s.keys != nil {
		err = errors.Join(err, s.keys.Close())
	}
	return err
}

// keyIDs lists the sessions of the key namespace that hold data keys: all
// but the namespace's marker.
func keyIDs(ctx context.Context, keys cairn.Store) ([]string, error) {
	var ids []string
	opts := cairn.ListOptions{Limit: 500}
	for {
		page, err := keys.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, info := range page.Sessions {
			if info.ID != markerID {
				ids = append(ids, info.ID)
			}
		}
		if page.Next == "" {
			return ids, nil
		}
		opts.Cursor = page.Next
	}
}

// Stat implements cairn.Store: Load's info, with no event read.
func (s *store) Stat(ctx context.Context, id string) (*cairn.SessionInfo, error) {
	rec, err := s.Load(ctx, id, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	return &rec.Info, nil
}
