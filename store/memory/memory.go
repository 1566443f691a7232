// Package memory is the reference cairn store: sessions kept in the
// process's memory, for tests and volatile use. It implements every part of
// the store contract and is the model the other backends are checked against.
//
// Its URL is "memory:". Every store opened by URL in one process shares one
// set of sessions, separated by namespace; New makes a private one.
//
// LongTerm is the reference backend of long-term memory (package
// longterm), on the same DB: longterm.Open("memory:") reaches the
// process's shared one, NewLongTerm a private one.
package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// DB holds sessions of every namespace. Stores opened on one DB with
// different namespaces never see each other's sessions.
type DB struct {
	mu         sync.Mutex
	namespaces map[string]map[string]*session
	items      *items                     // long-term memory (longterm.go), made by the first OpenLongTerm
	texts      map[string]*ltdriver.Index // each namespace's event texts (search.go)
}

type session struct {
	info    cairn.SessionInfo
	events  [][]byte // the envelopes, as driver.AppendEnvelope writes them
	expires time.Time
	snap    *cairn.Snapshot // the latest snapshot (snapshot.go), nil: none
	indexed []int64         // the seqs of its events in the text index (search.go)
}

// NewDB returns an empty DB.
func NewDB() *DB { return &DB{namespaces: map[string]map[string]*session{}} }

var shared = NewDB()

func init() {
	cairn.Register("memory", func(_ context.Context, _ *url.URL, opts cairn.StoreOptions) (cairn.Store, error) {
		return shared.Open(opts)
	})
}

// Store is a cairn.Store on a DB, seeing one namespace.
type Store struct {
	db    *DB
	opts  cairn.StoreOptions
	guard driver.Guard
}

var (
	_ cairn.Store     = (*Store)(nil)
	_ driver.Sweeper  = (*Store)(nil)
	_ driver.Searcher = (*Store)(nil)
)

// New returns a store on a DB of its own.
func New(opts cairn.StoreOptions) (*Store, error) { return NewDB().Open(opts) }

// Open returns a store on db that sees the namespace of opts.
func (db *DB) Open(opts cairn.StoreOptions) (*Store, error) {
	opts, err := driver.Options(opts)
	if err != nil {
		return nil, err
	}
	return &Store{db: db, opts: opts}, nil
}

// ns returns the namespace's sessions, with db.mu held by the caller.
func (s *Store) ns() map[string]*session {
	m := s.db.namespaces[s.opts.Namespace]
	if m == nil {
		m = map[string]*session{}
		s.db.namespaces[s.opts.Namespace] = m
	}
	return m
}

// live returns the session if it exists and has not expired, with db.mu held.
func (s *Store) live(id string) *session {
	ss := s.ns()[id]
	if ss == nil {
		return nil
	}
	if driver.Expired(ss.expires, s.opts.Now()) {
		s.drop(id)
		return nil
	}
	return ss
}

// Create implements cairn.Store.
func (s *Store) Create(ctx context.Context, meta cairn.SessionMeta) error {
	if err := s.guard.Session(meta.ID); err != nil {
		return err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if s.live(meta.ID) != nil {
		return cairn.ErrExists
	}
	now := s.opts.Now().UTC()
	created := meta.CreatedAt
	if created.IsZero() {
		created = now
	}
	s.ns()[meta.ID] = &session{
		info: cairn.SessionInfo{
			ID: meta.ID, CreatedAt: created.UTC(), UpdatedAt: now, Status: cairn.StatusNew,
			Labels: cloneLabels(meta.Labels),
		},
		expires: s.opts.ExpiresAt(now),
	}
	return nil
}

// withLive runs f on session id with db.mu held, or returns
// cairn.ErrNotFound when the session does not exist or has expired.
func (s *Store) withLive(id string, f func(*session) error) error {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	ss := s.live(id)
	if ss == nil {
		return cairn.ErrNotFound
	}
	return f(ss)
}

// Append implements cairn.Store.
func (s *Store) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	return s.append(ctx, id, nil, expectSeq, events)
}

// append appends events to session id at expectSeq, under the lease if one
// is given, checked under the same lock: it checks the expected seq (a
// retry of events the session holds at their seqs is already done) and
// applies the events.
func (s *Store) append(ctx context.Context, id string, lease *cairn.Lease, expectSeq int64, events []cairn.Event) error {
	events, err := s.guard.Append(s.opts.Limits, id, expectSeq, events)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.withLive(id, func(ss *session) error {
		if lease != nil && (lease.Session != id || held(ss, *lease) == nil) {
			return fmt.Errorf("append %s: %w", id, cairn.ErrLeaseLost)
		}
		return s.appendLocked(ss, expectSeq, events)
	})
}

// appendLocked appends events to ss at expectSeq, with db.mu held.
func (s *Store) appendLocked(ss *session, expectSeq int64, events []cairn.Event) error {
	if ss.info.LastSeq != expectSeq {
		if retried(ss, expectSeq, events) {
			return nil
		}
		return cairn.ErrConflict
	}
	envs := make([][]byte, len(events))
	for i, e := range events {
		b, err := driver.AppendEnvelope(nil, e)
		if err != nil {
			return err
		}
		envs[i] = b
	}
	now := s.opts.Now().UTC()
	ss.events = append(ss.events, envs...)
	s.index(ss, events)
	driver.Summarize(events).Apply(&ss.info, expectSeq+int64(len(events)), now)
	ss.expires = s.opts.ExpiresAt(now)
	return nil
}

// retried reports whether the session holds exactly events at the seqs
// after expectSeq, whether or not others follow them: an append sent again
// after its reply was lost. Envelopes are compared as stored, as the other
// stores compare them.
func retried(ss *session, expectSeq int64, events []cairn.Event) bool {
	end := expectSeq + int64(len(events))
	if expectSeq < 0 || ss.info.LastSeq < end || int64(len(ss.events)) != ss.info.LastSeq {
		return false
	}
	for i, stored := range ss.events[expectSeq:end] {
		b, err := driver.AppendEnvelope(nil, events[i])
		if err != nil || !bytes.Equal(stored, b) {
			return false
		}
	}
	return true
}

// Load implements cairn.Store.
func (s *Store) Load(ctx context.Context, id string, fromSeq int64) (*cairn.Record, error) {
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	var rec *cairn.Record
	err := s.withLive(id, func(ss *session) error {
		from := max(fromSeq, 1)
		var evs []cairn.Event
		if from <= int64(len(ss.events)) {
			evs = make([]cairn.Event, 0, int64(len(ss.events))-from+1)
			for _, b := range ss.events[from-1:] {
				e, err := decode(b)
				if err != nil {
					return fmt.Errorf("load %s: %w", id, err)
				}
				evs = append(evs, e)
			}
		}
		info := ss.info
		info.Labels = cloneLabels(info.Labels)
		rec = &cairn.Record{Info: info, Events: evs}
		return nil
	})
	return rec, err
}

// List implements cairn.Store.
func (s *Store) List(ctx context.Context, opts cairn.ListOptions) (*cairn.ListPage, error) {
	if err := s.guard.Check(); err != nil {
		return nil, err
	}
	s.db.mu.Lock()
	var all []cairn.SessionInfo
	for id := range s.ns() {
		if ss := s.live(id); ss != nil {
			info := ss.info
			info.Labels = cloneLabels(info.Labels)
			all = append(all, info)
		}
	}
	s.db.mu.Unlock()
	return driver.PageInfos(all, opts)
}

// Delete implements cairn.Store.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.guard.Session(id); err != nil {
		return err
	}
	return s.withLive(id, func(*session) error {
		s.drop(id)
		return nil
	})
}

// Sweep implements driver.Sweeper.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	return s.expired(true)
}

// CountExpired implements driver.Sweeper: how many sessions Sweep would
// delete now.
func (s *Store) CountExpired(ctx context.Context) (int, error) {
	return s.expired(false)
}

// expired counts the namespace's expired sessions, and deletes them when
// remove is set.
func (s *Store) expired(remove bool) (int, error) {
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	n := 0
	now := s.opts.Now()
	for id, ss := range s.ns() {
		if driver.Expired(ss.expires, now) {
			if remove {
				s.drop(id)
			}
			n++
		}
	}
	return n, nil
}

// Close implements cairn.Store.
func (s *Store) Close() error {
	s.guard.Close()
	return nil
}

func cloneLabels(l map[string]string) map[string]string {
	if l == nil {
		return map[string]string{}
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// decode reads back a stored envelope, as the other stores do: in one
// pass, or through encoding/json for one whose kind or run holds escapes.
func decode(b []byte) (cairn.Event, error) {
	if e, ok := driver.ParseEnvelope(b); ok {
		return e, nil
	}
	var e cairn.Event
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("stored event: %w", err)
	}
	return e, nil
}

// Stat implements cairn.Store: Load's info, with no event read.
func (s *Store) Stat(ctx context.Context, id string) (*cairn.SessionInfo, error) {
	rec, err := s.Load(ctx, id, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	return &rec.Info, nil
}
