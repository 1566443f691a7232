package ltdriver

import (
	"context"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm"
)

// Cursor is where a page of List ends: the namespace and key of its last
// item. The next page starts after it.
type Cursor struct {
	Namespace, Key string
}

// IsZero reports whether c is the start (no cursor).
func (c Cursor) IsZero() bool { return c.Namespace == "" }

// Encode returns the cursor as ListPage.Next.
func (c Cursor) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.Namespace + "\x00" + c.Key))
}

// After reports whether the item (ns, key) comes after c in List's order.
func (c Cursor) After(ns, key string) bool {
	if c.IsZero() {
		return true
	}
	d := longterm.ComparePaths(ns, c.Namespace)
	return d > 0 || d == 0 && key > c.Key
}

// CompareItems compares two items' places in List's order.
func CompareItems(ns1, key1, ns2, key2 string) int {
	if d := longterm.ComparePaths(ns1, ns2); d != 0 {
		return d
	}
	return strings.Compare(key1, key2)
}

// ParseCursor reads a cursor that Encode wrote; "" is the zero Cursor.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	bad := &longterm.InvalidError{What: "cursor", Why: "it is not a Next that List returned"}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, bad
	}
	ns, key, ok := strings.Cut(string(b), "\x00")
	if !ok || longterm.ValidateNamespace(ns) != nil || longterm.ValidateKey(key) != nil {
		return Cursor{}, bad
	}
	return Cursor{ns, key}, nil
}

// PageNamespaces returns the page of Namespaces that opts asks for, from
// the set of every namespace (cut to opts.Depth) that a backend found:
// in PathOrder, after opts.Cursor, at most opts.Limit.
func PageNamespaces(set map[string]bool, opts longterm.NamespaceOptions) *longterm.NamespacePage {
	var all []string
	for ns := range set {
		if opts.Cursor == "" || longterm.ComparePaths(ns, opts.Cursor) > 0 {
			all = append(all, ns)
		}
	}
	slices.SortFunc(all, longterm.ComparePaths)
	page := &longterm.NamespacePage{Namespaces: all[:min(len(all), opts.Limit)]}
	if len(all) > opts.Limit {
		page.Next = page.Namespaces[len(page.Namespaces)-1]
	}
	return page
}

// Page returns the page that List answers with items, read in its order up
// to limit+1: the first limit of them, and, when there were more, the
// cursor after the last one kept.
func Page(items []longterm.Item, limit int) *longterm.ListPage {
	page := &longterm.ListPage{Items: items}
	if len(items) > limit {
		page.Items = items[:limit]
		last := page.Items[limit-1]
		page.Next = Cursor{Namespace: last.Namespace, Key: last.Key}.Encode()
	}
	return page
}

// SessionNamespace returns the session namespace whose storage a memory
// opened with o shares: o.Namespace, cairn.DefaultNamespace when empty. It
// refuses a namespace that breaks the ID rules (driver.ValidateNamespace).
func SessionNamespace(o longterm.Options) (string, error) {
	ns := o.Namespace
	if ns == "" {
		ns = cairn.DefaultNamespace
	}
	if err := driver.ValidateNamespace(ns); err != nil {
		return "", err
	}
	return ns, nil
}

// RegisterByNamespace registers open with longterm.Register for the
// schemes of a server backend whose memory belongs to a session namespace:
// open gets the URL without its namespace parameter and the options with
// the namespace that the parameter, or else Options.Namespace, names
// (TakeNamespace).
func RegisterByNamespace(open func(ctx context.Context, url string, opts longterm.Options) (longterm.Store, error), schemes ...string) {
	opener := func(ctx context.Context, u *url.URL, opts longterm.Options) (longterm.Store, error) {
		ns, rest := TakeNamespace(u, opts)
		opts.Namespace = ns
		return open(ctx, rest, opts)
	}
	for _, scheme := range schemes {
		longterm.Register(scheme, opener)
	}
}

// TakeNamespace returns the session namespace a long-term store opened by
// URL belongs to, u's namespace parameter or else opts.Namespace, and u
// without the parameter (which a server's driver would read as a setting
// of its own).
func TakeNamespace(u *url.URL, opts longterm.Options) (ns, rest string) {
	c := *u
	q := c.Query()
	ns = q.Get("namespace")
	if ns == "" {
		ns = opts.Namespace
	}
	q.Del("namespace")
	c.RawQuery = q.Encode()
	return ns, c.String()
}
