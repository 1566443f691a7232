package ltdriver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm"
)

// CheckPut validates a Put and returns the item to store: the value
// compacted (null when empty), the text derived from the value when
// empty, the labels copied (nil when empty), the vector checked or
// computed by o.Embedder, and the fields the store sets cleared. It
// returns an error wrapping longterm.ErrInvalid for what breaks the rules,
// cairn.ErrTooLarge for an item past o.MaxItemSize, and the Embedder's
// error wrapped. o must have its defaults (Options.WithDefaults).
func CheckPut(ctx context.Context, o longterm.Options, item longterm.Item, po longterm.PutOptions) (longterm.Item, error) {
	if err := CheckKey(item.Namespace, item.Key); err != nil {
		return item, err
	}
	if po.IfVersion < longterm.IfAbsent {
		return item, &longterm.InvalidError{What: "if_version", Why: fmt.Sprintf("%d is neither a version, 0 (any) nor IfAbsent (-1)", po.IfVersion)}
	}
	if po.TTL < 0 {
		return item, &longterm.InvalidError{What: "ttl", Why: fmt.Sprintf("%v is negative", po.TTL)}
	}
	if err := longterm.ValidateLabels(item.Labels); err != nil {
		return item, err
	}
	if item.Source.Session != "" {
		if err := cairn.ValidateID(item.Source.Session); err != nil {
			return item, &longterm.InvalidError{What: "source", Why: err.Error()}
		}
	}
	if item.Source.Seq < 0 {
		return item, &longterm.InvalidError{What: "source", Why: fmt.Sprintf("seq %d is negative", item.Source.Seq)}
	}
	value, err := compactValue(item.Value)
	if err != nil {
		return item, err
	}
	item.Value = value
	if !utf8.ValidString(item.Text) {
		return item, &longterm.InvalidError{What: "text", Why: "it is not UTF-8"}
	}
	if item.Text == "" {
		item.Text = longterm.DeriveText(item.Value)
	}
	if n := len(item.Value) + len(item.Text); n > o.MaxItemSize {
		return item, fmt.Errorf("%w: item %s %s: value and text are %d bytes, the limit is %d",
			cairn.ErrTooLarge, item.Namespace, item.Key, n, o.MaxItemSize)
	}
	item.Labels = cloneLabels(item.Labels)
	item.Version, item.CreatedAt, item.UpdatedAt, item.ExpiresAt = 0, time.Time{}, time.Time{}, time.Time{}
	if len(item.Vector) > 0 {
		if err := CheckVector("vector", item.Vector); err != nil {
			return item, err
		}
		item.Vector = append([]float32(nil), item.Vector...)
		return item, nil
	}
	item.Vector, item.VectorModel = nil, ""
	if o.Embedder != nil && longterm.HasToken(item.Text) {
		v, err := embed(ctx, o.Embedder, item.Text)
		if err != nil {
			return item, fmt.Errorf("put %s %s: %w", item.Namespace, item.Key, err)
		}
		if v != nil {
			item.Vector, item.VectorModel = v, o.Embedder.Name()
		}
	}
	return item, nil
}

// embed returns the Embedder's vector of text, checked; nil for a zero
// vector.
func embed(ctx context.Context, e longterm.Embedder, text string) ([]float32, error) {
	vs, err := e.Embed(ctx, []string{text})
	if err != nil {
		return nil, fmt.Errorf("embed with %s: %w", e.Name(), err)
	}
	if len(vs) != 1 {
		return nil, fmt.Errorf("embed with %s: %d vectors for one text", e.Name(), len(vs))
	}
	if err := CheckVector("vector of embedder "+e.Name(), vs[0]); err != nil {
		return nil, err
	}
	for _, x := range vs[0] {
		if x != 0 {
			return vs[0], nil
		}
	}
	return nil, nil
}

// CheckVector checks a vector: at most longterm.MaxVectorDims numbers,
// each finite.
func CheckVector(what string, v []float32) error {
	if len(v) > longterm.MaxVectorDims {
		return &longterm.InvalidError{What: what, Why: fmt.Sprintf("%d dimensions, the limit is %d", len(v), longterm.MaxVectorDims)}
	}
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return &longterm.InvalidError{What: what, Why: fmt.Sprintf("element %d is %v", i, x)}
		}
	}
	return nil
}

// compactValue returns value compacted, or null for an empty one.
func compactValue(value json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(value)) == 0 {
		return json.RawMessage("null"), nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, value); err != nil {
		return nil, &longterm.InvalidError{What: "value", Why: "it is not JSON: " + err.Error()}
	}
	if !utf8.Valid(b.Bytes()) {
		return nil, &longterm.InvalidError{What: "value", Why: "it is not UTF-8"}
	}
	return b.Bytes(), nil
}

func cloneLabels(l map[string]string) map[string]string {
	if len(l) == 0 {
		return nil
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// CheckKey validates a namespace and a key.
func CheckKey(namespace, key string) error {
	if err := longterm.ValidateNamespace(namespace); err != nil {
		return err
	}
	return longterm.ValidateKey(key)
}

// CheckDelete validates a Delete.
func CheckDelete(namespace, key string, ifVersion int64) error {
	if err := CheckKey(namespace, key); err != nil {
		return err
	}
	if ifVersion < 0 {
		return &longterm.InvalidError{What: "if_version", Why: fmt.Sprintf("%d: a delete takes a version or 0 (any)", ifVersion)}
	}
	return nil
}

// CheckDeleteNamespace validates a DeleteNamespace: a namespace, never
// empty.
func CheckDeleteNamespace(prefix string) error {
	if prefix == "" {
		return &longterm.InvalidError{What: "prefix", Why: "it is empty: DeleteNamespace erases one namespace and those under it, never every namespace"}
	}
	return longterm.ValidatePrefix(prefix)
}

// CheckList validates List's options and returns them with the limit set,
// and the cursor parsed (the zero Cursor for the first page).
func CheckList(o longterm.ListOptions) (longterm.ListOptions, Cursor, error) {
	if err := longterm.ValidatePrefix(o.Prefix); err != nil {
		return o, Cursor{}, err
	}
	if err := longterm.ValidateLabels(o.Labels); err != nil {
		return o, Cursor{}, err
	}
	var err error
	if o.Limit, err = pageSize(o.Limit); err != nil {
		return o, Cursor{}, err
	}
	c, err := ParseCursor(o.Cursor)
	return o, c, err
}

// CheckNamespaces validates Namespaces' options and returns them with the
// limit set.
func CheckNamespaces(o longterm.NamespaceOptions) (longterm.NamespaceOptions, error) {
	if err := longterm.ValidatePrefix(o.Prefix); err != nil {
		return o, err
	}
	if o.Depth < 0 {
		return o, &longterm.InvalidError{What: "depth", Why: fmt.Sprintf("%d is negative", o.Depth)}
	}
	if o.Cursor != "" {
		if err := longterm.ValidateNamespace(o.Cursor); err != nil {
			return o, &longterm.InvalidError{What: "cursor", Why: "it is not one Namespaces returned"}
		}
	}
	var err error
	o.Limit, err = pageSize(o.Limit)
	return o, err
}

func pageSize(n int) (int, error) {
	switch {
	case n == 0:
		return longterm.DefaultListLimit, nil
	case n < 0 || n > longterm.MaxListLimit:
		return 0, &longterm.InvalidError{What: "limit", Why: fmt.Sprintf("%d is outside 1 to %d", n, longterm.MaxListLimit)}
	}
	return n, nil
}

// Now returns the store's time, in UTC.
func Now(o longterm.Options) time.Time { return o.Now().UTC() }

// Expired reports whether an item with expiry exp has expired at now.
func Expired(exp, now time.Time) bool { return !exp.IsZero() && !now.Before(exp) }

// Stamp sets what the store records on a Put of item: the version, the
// times and the expiry. old is the live item it replaces, or nil.
func Stamp(item *longterm.Item, old *longterm.Item, version int64, now time.Time, ttl time.Duration) {
	item.Version = version
	item.CreatedAt, item.UpdatedAt = now, now
	if old != nil {
		item.CreatedAt = old.CreatedAt
	}
	item.ExpiresAt = time.Time{}
	if ttl > 0 {
		item.ExpiresAt = now.Add(ttl)
	}
}

// Admit decides a conditional write: given the live item's version (0 when
// there is none) and the caller's expectation, it returns
// longterm.ErrConflict, wrapped with what was expected and found, when the
// write must not happen.
func Admit(namespace, key string, current, ifVersion int64) error {
	switch {
	case ifVersion == 0:
		return nil
	case ifVersion == longterm.IfAbsent && current != 0:
		return fmt.Errorf("%w: %s %s exists (version %d)", longterm.ErrConflict, namespace, key, current)
	case ifVersion > 0 && current == 0:
		return fmt.Errorf("%w: %s %s: expected version %d, the item does not exist", longterm.ErrConflict, namespace, key, ifVersion)
	case ifVersion > 0 && current != ifVersion:
		return fmt.Errorf("%w: %s %s: expected version %d, found %d", longterm.ErrConflict, namespace, key, ifVersion, current)
	}
	return nil
}

// NotFound returns longterm.ErrNotFound wrapped with the item's place.
func NotFound(namespace, key string) error {
	return fmt.Errorf("%w: %s %s", longterm.ErrNotFound, namespace, key)
}

// MatchLabels reports whether have holds every label of want, with its
// value.
func MatchLabels(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// CutNamespace returns ns cut to its first depth segments (all of it when
// depth is 0 or ns has no more).
func CutNamespace(ns string, depth int) string {
	if depth <= 0 {
		return ns
	}
	for i := 0; i < len(ns); i++ {
		if ns[i] == '/' {
			depth--
			if depth == 0 {
				return ns[:i]
			}
		}
	}
	return ns
}

// Clone returns a deep copy of item; without the vector when vector is
// false.
func Clone(item *longterm.Item, vector bool) longterm.Item {
	c := *item
	c.Value = append(json.RawMessage(nil), item.Value...)
	c.Labels = cloneLabels(item.Labels)
	c.Vector = nil
	if vector && len(item.Vector) > 0 {
		c.Vector = append([]float32(nil), item.Vector...)
	}
	return c
}

// SkipNamespaces lists the namespaces opts asks for (checked by
// CheckNamespaces) by seeking through a store's items in path order
// (longterm.PathOrder): first returns the namespace of the first live item
// whose path is at pos or after it (after it alone when !inclusive) and
// before hi, or found false when there is none. Each namespace listed
// costs one seek, and with a depth each cut one: a cut of full depth skips
// its whole subtree.
func SkipNamespaces(opts longterm.NamespaceOptions, first func(pos, hi string, inclusive bool) (ns string, found bool, err error)) (*longterm.NamespacePage, error) {
	hi := "\x7f"
	pos, inclusive := "", true
	if opts.Prefix != "" {
		pos, hi = longterm.PrefixRange(opts.Prefix)
	}
	// after moves the seek past namespace ns listed as cut: past the
	// subtree of a cut of full depth (all of it lists as the cut), past ns
	// alone otherwise.
	after := func(ns, cut string) {
		if opts.Depth > 0 && strings.Count(cut, "/")+1 == opts.Depth {
			pos, inclusive = longterm.PathOrder(cut)+"!", true
			return
		}
		pos, inclusive = longterm.PathOrder(ns), false
	}
	if opts.Cursor != "" && longterm.ComparePaths(opts.Cursor, opts.Prefix) >= 0 {
		after(opts.Cursor, opts.Cursor)
	}
	page := &longterm.NamespacePage{}
	for len(page.Namespaces) <= opts.Limit {
		ns, found, err := first(pos, hi, inclusive)
		if err != nil {
			return nil, err
		}
		if !found {
			break
		}
		cut := CutNamespace(ns, opts.Depth)
		if n := len(page.Namespaces); n == 0 || page.Namespaces[n-1] != cut {
			page.Namespaces = append(page.Namespaces, cut)
		}
		after(ns, cut)
	}
	if len(page.Namespaces) > opts.Limit {
		page.Namespaces = page.Namespaces[:opts.Limit]
		page.Next = page.Namespaces[opts.Limit-1]
	}
	return page, nil
}
