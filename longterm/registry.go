package longterm

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/cairnhq/cairn/internal/storeurl"
	"github.com/cairnhq/cairn/internal/text"
)

// backends maps the URL schemes of the backends in this module that keep
// long-term memory to the package whose import registers them, for the
// error of an unregistered scheme.
var backends = map[string]string{
	"file":        "store/file",
	"memory":      "store/memory",
	"mongodb":     "store/mongodb",
	"mongodb+srv": "store/mongodb",
	"postgres":    "store/postgres",
	"postgresql":  "store/postgres",
	"redis":       "store/redis",
	"rediss":      "store/redis",
	"sqlite":      "store/sqlite",
}

// registry holds the openers of the backends, by URL scheme.
var registry = storeurl.NewRegistry[Options, Store]("longterm")

// Register makes a backend reachable by URL scheme for Open: open opens a
// store from a parsed URL of that scheme. It panics if the scheme is
// registered twice or open is nil, as database/sql.Register does. Backends
// call it from init, beside their cairn.Register; import a backend package
// (or store/all) for its side effect to make its scheme available.
func Register(scheme string, open func(ctx context.Context, u *url.URL, opts Options) (Store, error)) {
	registry.Register(scheme, open)
}

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string { return registry.Schemes() }

// Open opens the long-term store a URL names: the URLs of cairn.Open, so
// that one URL holds a program's sessions and its long-term memory
// ("sqlite:///.cairn/cairn.db" keeps both in one file, "file:///dir" in
// one folder, "memory:" in the process).
func Open(ctx context.Context, rawURL string, opts Options) (Store, error) {
	u, err := storeurl.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open memory store: %w", err)
	}
	scheme := strings.ToLower(u.Scheme)
	open, ok := registry.Opener(scheme)
	if _, session := storeurl.Backends[scheme]; !ok && session && backends[scheme] == "" {
		return nil, fmt.Errorf("open memory store: the %s backend keeps no long-term memory (those that do: %s)", scheme, strings.Join(slices.Sorted(maps.Keys(backends)), ", "))
	}
	if !ok {
		return nil, fmt.Errorf("open memory store: %s", storeurl.Unknown(scheme, text.RedactURL(rawURL), Schemes(), backends))
	}
	s, err := open(ctx, u, opts)
	if err != nil || opts.Sealed {
		return s, err
	}
	// An encrypted store read without its key would give sealed tokens
	// as values, and its keys as items.
	page, err := s.Namespaces(ctx, NamespaceOptions{Prefix: KeysNamespace, Limit: 1})
	if err == nil && len(page.Namespaces) > 0 {
		err = fmt.Errorf("open memory store %s: %w: open it with its key (crypt.OpenLongTerm)", text.RedactURL(rawURL), ErrEncrypted)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
