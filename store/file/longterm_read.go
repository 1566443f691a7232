//go:build linux || darwin

package file

import (
	"context"
	"fmt"
	"slices"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// List implements longterm.Store: the namespaces under the prefix in path
// order, from the cursor's on, each file's items in key order.
func (s *LongTerm) List(ctx context.Context, opts longterm.ListOptions) (*longterm.ListPage, error) {
	s.ops.RLock()
	defer s.ops.RUnlock()
	opts, cur, err := s.guard.List(opts)
	if err != nil {
		return nil, err
	}
	nss, err := s.namespaces(opts.Prefix)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	now := ltdriver.Now(s.opts)
	page := &longterm.ListPage{}
	for _, ns := range nss {
		if !cur.IsZero() && longterm.ComparePaths(ns, cur.Namespace) < 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d, err := s.readNS(ns)
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		if d == nil {
			continue
		}
		keys := make([]string, 0, len(d.items))
		for k, it := range d.items {
			if cur.After(ns, k) && !ltdriver.Expired(it.ExpiresAt, now) && ltdriver.MatchLabels(opts.Labels, it.Labels) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if len(page.Items) == opts.Limit {
				last := page.Items[len(page.Items)-1]
				page.Next = ltdriver.Cursor{Namespace: last.Namespace, Key: last.Key}.Encode()
				return page, nil
			}
			page.Items = append(page.Items, ltdriver.Clone(d.items[k], opts.Vectors))
		}
	}
	return page, nil
}

// Namespaces implements longterm.Store.
func (s *LongTerm) Namespaces(ctx context.Context, opts longterm.NamespaceOptions) (*longterm.NamespacePage, error) {
	s.ops.RLock()
	defer s.ops.RUnlock()
	opts, err := s.guard.Namespaces(opts)
	if err != nil {
		return nil, err
	}
	nss, err := s.namespaces(opts.Prefix)
	if err != nil {
		return nil, fmt.Errorf("namespaces: %w", err)
	}
	now := ltdriver.Now(s.opts)
	seen := map[string]bool{}
	for _, ns := range nss {
		cut := ltdriver.CutNamespace(ns, opts.Depth)
		if seen[cut] || opts.Cursor != "" && longterm.ComparePaths(cut, opts.Cursor) <= 0 {
			continue
		}
		d, err := s.readNS(ns)
		if err != nil {
			return nil, fmt.Errorf("namespaces: %w", err)
		}
		if len(liveItems(d, now, "")) > 0 {
			seen[cut] = true
		}
	}
	return ltdriver.PageNamespaces(seen, opts), nil
}

// Search implements longterm.Store. Each namespace's file carries a text
// index of its items (ltdriver.Index); BM25's statistics are taken over
// the namespaces searched.
func (s *LongTerm) Search(ctx context.Context, opts longterm.SearchOptions) ([]longterm.Result, error) {
	s.ops.RLock()
	defer s.ops.RUnlock()
	q, err := s.guard.Search(ctx, s.opts, opts)
	if err != nil {
		return nil, err
	}
	nss, err := s.namespaces(q.Prefix)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	now := ltdriver.Now(s.opts)
	var files []*nsFile
	byIndex := map[*ltdriver.Index]*nsFile{}
	var indexes []*ltdriver.Index
	for _, ns := range nss {
		d, err := s.readNS(ns)
		if err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		if d != nil {
			files = append(files, d)
			indexes = append(indexes, d.index)
			byIndex[d.index] = d
		}
	}
	keep := func(it *longterm.Item) bool {
		return !ltdriver.Expired(it.ExpiresAt, now) && ltdriver.MatchLabels(q.Labels, it.Labels)
	}
	item := func(x *ltdriver.Index, key string) *longterm.Item { return byIndex[x].items[key] }
	items := func(yield func(*longterm.Item) bool) {
		for _, d := range files {
			for _, it := range d.items {
				if !yield(it) {
					return
				}
			}
		}
	}
	return ltdriver.SearchItems(q, indexes, item, items, keep), nil
}
