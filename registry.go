package cairn

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/cairnhq/cairn/internal/storeurl"
	"github.com/cairnhq/cairn/internal/text"
)

// registry holds the openers of the backends, by URL scheme.
var registry = storeurl.NewRegistry[StoreOptions, Store]("cairn")

// Register makes a backend reachable by URL scheme for Open: open opens a
// store from a parsed URL of that scheme. It panics if
// the scheme is registered twice or the opener is nil, as database/sql.Register does.
// Backends call it from init; import a backend package (or store/all) for
// its side effect to make its scheme available.
func Register(scheme string, open func(ctx context.Context, u *url.URL, opts StoreOptions) (Store, error)) {
	registry.Register(scheme, open)
}

// Open opens the store a URL names, such as "sqlite:///path/cairn.db",
// "postgres://host/db", "redis://host:6379/0" or "memory:".
func Open(ctx context.Context, rawURL string, opts StoreOptions) (Store, error) {
	u, err := storeurl.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	scheme := strings.ToLower(u.Scheme)
	open, ok := registry.Opener(scheme)
	if !ok {
		return nil, fmt.Errorf("open store: %s", storeurl.Unknown(scheme, redact(rawURL), registry.Schemes(), storeurl.Backends))
	}
	return open(ctx, u, opts)
}

// redact hides a password in a URL for messages.
func redact(raw string) string { return text.RedactURL(raw) }
