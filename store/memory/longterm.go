package memory

import (
	"context"
	"maps"
	"net/url"
	"slices"
	"sync"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

func init() {
	longterm.Register("memory", func(_ context.Context, _ *url.URL, opts longterm.Options) (longterm.Store, error) {
		return shared.OpenLongTerm(opts)
	})
}

// items is a DB's long-term memory: every item by namespace and key, and
// one text index over them all, as SQLite's FTS5 table is one.
type items struct {
	mu       sync.RWMutex
	byID     map[string]*longterm.Item // itemID(namespace, key) → item
	index    *ltdriver.Index           // over the same IDs
	revision int64                     // the last version given
}

func itemID(ns, key string) string { return ns + "\x00" + key }

// LongTerm is a longterm.Store on a DB: the reference backend of
// long-term memory, in the process's memory. Every LongTerm of one DB
// sees the same items.
type LongTerm struct {
	db    *items
	opts  longterm.Options
	guard ltdriver.Guard
}

var (
	_ longterm.Store   = (*LongTerm)(nil)
	_ longterm.Sweeper = (*LongTerm)(nil)
)

// NewLongTerm returns a long-term store on a DB of its own.
func NewLongTerm(opts longterm.Options) (*LongTerm, error) { return NewDB().OpenLongTerm(opts) }

// OpenLongTerm returns a long-term store on db's items.
func (db *DB) OpenLongTerm(opts longterm.Options) (*LongTerm, error) {
	db.mu.Lock()
	if db.items == nil {
		db.items = &items{byID: map[string]*longterm.Item{}, index: ltdriver.NewIndex()}
	}
	it := db.items
	db.mu.Unlock()
	return &LongTerm{db: it, opts: opts.WithDefaults()}, nil
}

// live returns the live item at id, erasing it if it has expired; with
// db.mu held for writing.
func (s *LongTerm) live(id string) *longterm.Item {
	it := s.db.byID[id]
	if it != nil && ltdriver.Expired(it.ExpiresAt, ltdriver.Now(s.opts)) {
		s.erase(id)
		return nil
	}
	return it
}

// visible reports whether it is live, for readers (db.mu held for
// reading, so an expired item is skipped, not erased).
func (s *LongTerm) visible(it *longterm.Item) bool {
	return !ltdriver.Expired(it.ExpiresAt, ltdriver.Now(s.opts))
}

func (s *LongTerm) erase(id string) {
	delete(s.db.byID, id)
	s.db.index.Remove(id)
}

// Put implements longterm.Store.
func (s *LongTerm) Put(ctx context.Context, item longterm.Item, opts longterm.PutOptions) (*longterm.Item, error) {
	item, err := s.guard.Put(ctx, s.opts, item, opts)
	if err != nil {
		return nil, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if err := s.guard.Check(); err != nil {
		return nil, err
	}
	id := itemID(item.Namespace, item.Key)
	old := s.live(id)
	var current int64
	if old != nil {
		current = old.Version
	}
	if err := ltdriver.Admit(item.Namespace, item.Key, current, opts.IfVersion); err != nil {
		return nil, err
	}
	s.db.revision++
	ltdriver.Stamp(&item, old, s.db.revision, ltdriver.Now(s.opts), opts.TTL)
	stored := ltdriver.Clone(&item, true)
	s.db.byID[id] = &stored
	s.db.index.Set(id, stored.Namespace, stored.Text)
	out := ltdriver.Clone(&stored, true)
	return &out, nil
}

// Get implements longterm.Store.
func (s *LongTerm) Get(ctx context.Context, namespace, key string) (*longterm.Item, error) {
	if err := s.guard.Key(namespace, key); err != nil {
		return nil, err
	}
	s.db.mu.RLock()
	defer s.db.mu.RUnlock()
	it := s.db.byID[itemID(namespace, key)]
	if it == nil || !s.visible(it) {
		return nil, ltdriver.NotFound(namespace, key)
	}
	out := ltdriver.Clone(it, true)
	return &out, nil
}

// Delete implements longterm.Store.
func (s *LongTerm) Delete(ctx context.Context, namespace, key string, ifVersion int64) error {
	if err := s.guard.Delete(namespace, key, ifVersion); err != nil {
		return err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	id := itemID(namespace, key)
	it := s.live(id)
	if it == nil {
		return ltdriver.NotFound(namespace, key)
	}
	if err := ltdriver.Admit(namespace, key, it.Version, ifVersion); err != nil {
		return err
	}
	s.erase(id)
	return nil
}

// DeleteNamespace implements longterm.Store.
func (s *LongTerm) DeleteNamespace(ctx context.Context, prefix string) (int, error) {
	if err := s.guard.DeleteNamespace(prefix); err != nil {
		return 0, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	n := 0
	for id, it := range s.db.byID {
		if longterm.InPrefix(prefix, it.Namespace) {
			if s.visible(it) {
				n++
			}
			s.erase(id)
		}
	}
	return n, nil
}

// List implements longterm.Store.
func (s *LongTerm) List(ctx context.Context, opts longterm.ListOptions) (*longterm.ListPage, error) {
	opts, cur, err := s.guard.List(opts)
	if err != nil {
		return nil, err
	}
	s.db.mu.RLock()
	defer s.db.mu.RUnlock()
	var all []*longterm.Item
	for _, it := range s.db.byID {
		if longterm.InPrefix(opts.Prefix, it.Namespace) && cur.After(it.Namespace, it.Key) &&
			s.visible(it) && ltdriver.MatchLabels(opts.Labels, it.Labels) {
			all = append(all, it)
		}
	}
	slices.SortFunc(all, func(a, b *longterm.Item) int {
		return ltdriver.CompareItems(a.Namespace, a.Key, b.Namespace, b.Key)
	})
	items := make([]longterm.Item, 0, min(len(all), opts.Limit+1))
	for _, it := range all[:min(len(all), opts.Limit+1)] {
		items = append(items, ltdriver.Clone(it, opts.Vectors))
	}
	return ltdriver.Page(items, opts.Limit), nil
}

// Namespaces implements longterm.Store.
func (s *LongTerm) Namespaces(ctx context.Context, opts longterm.NamespaceOptions) (*longterm.NamespacePage, error) {
	opts, err := s.guard.Namespaces(opts)
	if err != nil {
		return nil, err
	}
	s.db.mu.RLock()
	seen := map[string]bool{}
	for _, it := range s.db.byID {
		if longterm.InPrefix(opts.Prefix, it.Namespace) && s.visible(it) {
			seen[ltdriver.CutNamespace(it.Namespace, opts.Depth)] = true
		}
	}
	s.db.mu.RUnlock()
	return ltdriver.PageNamespaces(seen, opts), nil
}

// Search implements longterm.Store.
func (s *LongTerm) Search(ctx context.Context, opts longterm.SearchOptions) ([]longterm.Result, error) {
	q, err := s.guard.Search(ctx, s.opts, opts)
	if err != nil {
		return nil, err
	}
	s.db.mu.RLock()
	defer s.db.mu.RUnlock()
	keep := func(it *longterm.Item) bool {
		return it != nil && longterm.InPrefix(q.Prefix, it.Namespace) && s.visible(it) && ltdriver.MatchLabels(q.Labels, it.Labels)
	}
	item := func(_ *ltdriver.Index, id string) *longterm.Item { return s.db.byID[id] }
	return ltdriver.SearchItems(q, []*ltdriver.Index{s.db.index}, item, maps.Values(s.db.byID), keep), nil
}

// Sweep implements longterm.Sweeper.
func (s *LongTerm) Sweep(ctx context.Context) (int, error) {
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	n := 0
	for id, it := range s.db.byID {
		if !s.visible(it) {
			s.erase(id)
			n++
		}
	}
	return n, nil
}

// Close implements longterm.Store. The items stay in the DB.
func (s *LongTerm) Close() error {
	s.guard.Close()
	return nil
}
