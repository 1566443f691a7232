package cairn

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/cairnhq/cairn/internal/storeurl"
	"github.com/cairnhq/cairn/internal/text"
)

// opener opens a store from a parsed URL. Backends register one per scheme.
type opener = func(ctx context.Context, u *url.URL, opts StoreOptions) (Store, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]opener{}
)

// Register makes a backend reachable by URL scheme for Open: open opens a
// store from a parsed URL of that scheme. It panics if
// the scheme is registered twice or the opener is nil, as database/sql.Register does.
// Backends call it from init; import a backend package (or store/all) for
// its side effect to make its scheme available.
func Register(scheme string, open func(ctx context.Context, u *url.URL, opts StoreOptions) (Store, error)) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if open == nil {
		panic("cairn: Register opener is nil")
	}
	if _, dup := registry[scheme]; dup {
		panic("cairn: Register called twice for scheme " + scheme)
	}
	registry[scheme] = open
}

// schemes returns the registered URL schemes, sorted.
func schemes() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var s []string
	for k := range registry {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// Open opens the store a URL names, such as "sqlite:///path/cairn.db",
// "postgres://host/db", "redis://host:6379/0" or "memory:".
func Open(ctx context.Context, rawURL string, opts StoreOptions) (Store, error) {
	u, err := storeurl.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	scheme := strings.ToLower(u.Scheme)
	registryMu.RLock()
	open, ok := registry[scheme]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("open store: %s", storeurl.Unknown(scheme, redact(rawURL), schemes(), storeurl.Backends))
	}
	return open(ctx, u, opts)
}

// redact hides a password in a URL for messages.
func redact(raw string) string { return text.RedactURL(raw) }
