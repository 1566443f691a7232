package crypt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// sealedItem is what an item's sealed value holds: its value, text and
// vector.
type sealedItem struct {
	Value  json.RawMessage `json:"v"`
	Text   string          `json:"t,omitempty"`
	Vector []byte          `json:"e,omitempty"` // ltdriver.EncodeVector's bytes
	Model  string          `json:"m,omitempty"` // the vector's model
}

func itemAAD(ns, key string) []byte {
	return []byte("cairn longterm item v1\x00" + ns + "\x00" + key)
}

// seal returns the item as inner stores it: its value a token of the
// sealed value, text and vector, its text the hashes of its words.
func (s *longTerm) seal(ik []byte, k *nsKeyT, it longterm.Item) (longterm.Item, error) {
	plain, err := json.Marshal(sealedItem{Value: it.Value, Text: it.Text, Vector: ltdriver.EncodeVector(it.Vector), Model: it.VectorModel})
	if err != nil {
		return it, err
	}
	sealed, err := seal(k.dek, plain, itemAAD(it.Namespace, it.Key))
	if err != nil {
		return it, fmt.Errorf("seal %s %s: %w", it.Namespace, it.Key, err)
	}
	tok, _ := json.Marshal(makeToken(k.id, sealed))
	out := it
	out.Value, out.Text, out.Vector, out.VectorModel = tok, blindText(ik, it.Text), nil, ""
	return out, nil
}

// open returns the item inner holds, opened. The namespace's key is read
// again once when the item names another (the namespace was erased and
// written again since it was cached).
func (s *longTerm) open(ctx context.Context, it longterm.Item) (longterm.Item, error) {
	where := it.Namespace + " " + it.Key
	var tok string
	if json.Unmarshal(it.Value, &tok) != nil {
		return it, fmt.Errorf("%w: item %s is not encrypted; refusing it", ErrPlaintext, where)
	}
	dkid, sealed, ok := parseToken(tok)
	if !ok {
		return it, fmt.Errorf("%w: item %s is not encrypted; refusing it", ErrPlaintext, where)
	}
	k, err := s.nsKey(ctx, it.Namespace, false)
	if err == nil && k != nil && k.id != dkid {
		s.forgetKeys(it.Namespace)
		k, err = s.nsKey(ctx, it.Namespace, false)
	}
	switch {
	case err != nil:
		return it, err
	case k == nil:
		return it, fmt.Errorf("%w: item %s: its namespace has no data key: it was erased", ErrUnknownKey, where)
	case k.id != dkid:
		return it, fmt.Errorf("%w: item %s is sealed by data key %s, its namespace's is %s", ErrTampered, where, dkid, k.id)
	}
	plain, err := open(k.dek, sealed, itemAAD(it.Namespace, it.Key))
	if err != nil {
		return it, fmt.Errorf("%w: item %s", ErrTampered, where)
	}
	var si sealedItem
	if err := json.Unmarshal(plain, &si); err != nil {
		return it, fmt.Errorf("%w: item %s: %v", ErrTampered, where, err)
	}
	v, err := ltdriver.DecodeVector(si.Vector)
	if err != nil {
		return it, fmt.Errorf("%w: item %s: %v", ErrTampered, where, err)
	}
	it.Value, it.Text, it.Vector, it.VectorModel = si.Value, si.Text, v, si.Model
	return it, nil
}

// Put implements longterm.Store. The item is checked (and its vector
// computed) before it is sealed. A Put that raced with an erasure of its
// namespace, and sealed the item with the key erased, takes its item back
// and puts it again under the namespace's new key.
func (s *longTerm) Put(ctx context.Context, item longterm.Item, opts longterm.PutOptions) (*longterm.Item, error) {
	item, err := s.guard.Put(ctx, s.opts, item, opts)
	if err != nil {
		return nil, err
	}
	if err := reserved("namespace", item.Namespace); err != nil {
		return nil, err
	}
	ik, err := s.indexKey(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("put %s %s: %w", item.Namespace, item.Key, err)
	}
	for range 3 {
		k, err := s.nsKey(ctx, item.Namespace, true)
		if err != nil {
			return nil, fmt.Errorf("put %s %s: %w", item.Namespace, item.Key, err)
		}
		sealed, err := s.seal(ik, k, item)
		if err != nil {
			return nil, err
		}
		stored, err := s.inner.Put(ctx, sealed, opts)
		if err != nil {
			return nil, err
		}
		now, err := s.key(ctx, LongTermKeys+"/"+item.Namespace, "data", "namespace "+item.Namespace, false)
		if err != nil {
			return nil, fmt.Errorf("put %s %s: %w", item.Namespace, item.Key, err)
		}
		if now != nil && now.id == k.id {
			out := *stored
			out.Value, out.Text, out.Vector, out.VectorModel = item.Value, item.Text, item.Vector, item.VectorModel
			return &out, nil
		}
		s.forgetKeys(item.Namespace)
		if err := s.inner.Delete(ctx, item.Namespace, item.Key, stored.Version); err != nil && !errors.Is(err, longterm.ErrNotFound) && !errors.Is(err, longterm.ErrConflict) {
			return nil, err
		}
		if opts.IfVersion > 0 {
			return nil, fmt.Errorf("%w: %s %s: its namespace was erased", longterm.ErrConflict, item.Namespace, item.Key)
		}
	}
	return nil, fmt.Errorf("put %s %s: its namespace was erased three times while it was written", item.Namespace, item.Key)
}

// Get implements longterm.Store.
func (s *longTerm) Get(ctx context.Context, namespace, key string) (*longterm.Item, error) {
	if err := s.guard.Key(namespace, key); err != nil {
		return nil, err
	}
	if err := reserved("namespace", namespace); err != nil {
		return nil, err
	}
	it, err := s.inner.Get(ctx, namespace, key)
	if err != nil {
		return nil, err
	}
	opened, err := s.open(ctx, *it)
	if err != nil {
		return nil, err
	}
	return &opened, nil
}

// Delete implements longterm.Store.
func (s *longTerm) Delete(ctx context.Context, namespace, key string, ifVersion int64) error {
	if err := s.guard.Delete(namespace, key, ifVersion); err != nil {
		return err
	}
	if err := reserved("namespace", namespace); err != nil {
		return err
	}
	return s.inner.Delete(ctx, namespace, key, ifVersion)
}

// DeleteNamespace implements longterm.Store: the data keys of the
// namespaces go first, so that what the wrapped store keeps of their items
// afterwards (free pages, dead rows, backups) no longer opens.
func (s *longTerm) DeleteNamespace(ctx context.Context, prefix string) (int, error) {
	if err := s.guard.DeleteNamespace(prefix); err != nil {
		return 0, err
	}
	if err := reserved("prefix", prefix); err != nil {
		return 0, err
	}
	if _, err := s.inner.DeleteNamespace(ctx, LongTermKeys+"/"+prefix); err != nil {
		return 0, fmt.Errorf("delete the keys of %s: %w", prefix, err)
	}
	s.forgetKeys(prefix)
	return s.inner.DeleteNamespace(ctx, prefix)
}

// List implements longterm.Store.
func (s *longTerm) List(ctx context.Context, opts longterm.ListOptions) (*longterm.ListPage, error) {
	opts, _, err := s.guard.List(opts)
	if err != nil {
		return nil, err
	}
	if opts.Prefix != "" {
		if err := reserved("prefix", opts.Prefix); err != nil {
			return nil, err
		}
	}
	page := &longterm.ListPage{}
	for {
		p, err := s.inner.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, it := range p.Items {
			if longterm.InPrefix(LongTermKeys, it.Namespace) {
				continue
			}
			opened, err := s.open(ctx, it)
			if err != nil {
				return nil, err
			}
			if !opts.Vectors {
				opened.Vector = nil
			}
			page.Items = append(page.Items, opened)
		}
		// A page of keys alone (the prefix is empty): read on.
		page.Next = p.Next
		if len(page.Items) > 0 || p.Next == "" {
			return page, nil
		}
		opts.Cursor = p.Next
	}
}

// Namespaces implements longterm.Store.
func (s *longTerm) Namespaces(ctx context.Context, opts longterm.NamespaceOptions) (*longterm.NamespacePage, error) {
	opts, err := s.guard.Namespaces(opts)
	if err != nil {
		return nil, err
	}
	if opts.Prefix != "" {
		if err := reserved("prefix", opts.Prefix); err != nil {
			return nil, err
		}
	}
	page := &longterm.NamespacePage{}
	for {
		p, err := s.inner.Namespaces(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, ns := range p.Namespaces {
			if !longterm.InPrefix(LongTermKeys, ns) {
				page.Namespaces = append(page.Namespaces, ns)
			}
		}
		page.Next = p.Next
		if len(page.Namespaces) > 0 || p.Next == "" {
			return page, nil
		}
		opts.Cursor = p.Next
	}
}

// Search implements longterm.Store. The text side is the wrapped store's
// search for the hashes of the query's words; the vector side opens every
// item under the prefix with the labels (the vector and its model are
// sealed) and compares here.
func (s *longTerm) Search(ctx context.Context, opts longterm.SearchOptions) ([]longterm.Result, error) {
	q, err := s.guard.Search(ctx, s.opts, opts)
	if err != nil {
		return nil, err
	}
	if q.Prefix != "" {
		if err := reserved("prefix", q.Prefix); err != nil {
			return nil, err
		}
	}
	opened := map[[2]string]longterm.Item{}
	ranked, err := ltdriver.Find(ctx, q, s.textHits, func(ctx context.Context, q ltdriver.Search) ([]ltdriver.Hit, error) {
		return s.vectorHits(ctx, q, opened)
	})
	if err != nil {
		return nil, err
	}
	var out []longterm.Result
	for _, r := range ranked {
		it, ok := opened[[2]string{r.Namespace, r.Key}]
		if !ok {
			if it, err = s.open(ctx, r.Ref.(longterm.Item)); err != nil {
				return nil, err
			}
			it.Vector = nil
		}
		out = append(out, r.Result(it))
	}
	return out, nil
}

// textHits returns the wrapped store's text hits for the hashes of the
// query's words (none before the index key exists), each with the sealed
// item as Ref.
func (s *longTerm) textHits(ctx context.Context, q ltdriver.Search) ([]ltdriver.Hit, error) {
	ik, err := s.indexKey(ctx, false)
	if err != nil || ik == nil {
		return nil, err
	}
	rs, err := s.inner.Search(ctx, longterm.SearchOptions{Query: blindQuery(ik, q.Phrases), Mode: longterm.ModeText,
		Prefix: q.Prefix, Labels: q.Labels, Limit: min(q.Candidates, longterm.MaxSearchLimit)})
	if err != nil {
		return nil, err
	}
	var text []ltdriver.Hit
	for _, r := range rs {
		text = append(text, ltdriver.Hit{Namespace: r.Item.Namespace, Key: r.Item.Key, Text: r.TextScore, Ref: r.Item})
	}
	return text, nil
}

// vectorHits returns the best q.Candidates items by cosine similarity,
// opening every item under the prefix with the labels; it keeps the
// opened items of its hits, without their vectors, in opened.
func (s *longTerm) vectorHits(ctx context.Context, q ltdriver.Search, opened map[[2]string]longterm.Item) ([]ltdriver.Hit, error) {
	top := ltdriver.NewTopHits(q.Candidates, true)
	lo := longterm.ListOptions{Prefix: q.Prefix, Labels: q.Labels, Limit: longterm.MaxListLimit}
	for {
		p, err := s.inner.List(ctx, lo)
		if err != nil {
			return nil, err
		}
		for _, it := range p.Items {
			if longterm.InPrefix(LongTermKeys, it.Namespace) {
				continue
			}
			o, err := s.open(ctx, it)
			if err != nil {
				return nil, err
			}
			if q.VectorMatches(o.VectorModel, len(o.Vector)) {
				cos := longterm.Cosine(q.Vector, o.Vector)
				o.Vector = nil
				opened[[2]string{o.Namespace, o.Key}] = o
				top.Offer(ltdriver.Hit{Namespace: o.Namespace, Key: o.Key, Vector: cos, Ref: o})
			}
		}
		if p.Next == "" {
			return top.Hits(), nil
		}
		lo.Cursor = p.Next
	}
}

// Sweep implements longterm.Sweeper over a wrapped store that is one.
func (s sweepingLongTerm) Sweep(ctx context.Context) (int, error) {
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	return s.inner.(longterm.Sweeper).Sweep(ctx)
}
