package cairn

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Opener opens a store from a parsed URL. Backends register one per scheme.
type Opener func(ctx context.Context, u *url.URL, opts StoreOptions) (Store, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Opener{}
)

// Register makes a backend reachable by URL scheme for Open. It panics if
// the scheme is registered twice or the opener is nil, as database/sql.Register does.
// Backends call it from init; import a backend package (or store/all) for
// its side effect to make its scheme available.
func Register(scheme string, open Opener) {
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

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string {
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
	u, err := url.Parse(rawURL)
	if err != nil {
		var ok bool
		if u, ok = parseMultiHost(rawURL); !ok {
			return nil, fmt.Errorf("open store: malformed URL %q: %v", redact(rawURL), err)
		}
	}
	scheme := strings.ToLower(u.Scheme)
	registryMu.RLock()
	open, ok := registry[scheme]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("open store: unknown scheme %q in %q (known: %s)", scheme, redact(rawURL), strings.Join(Schemes(), ", "))
	}
	return open(ctx, u, opts)
}

// parseMultiHost parses URLs that name several hosts, such as
// "mongodb://h1:27017,h2:27017/db?replicaSet=rs", which url.Parse refuses
// (it reads one port). The hosts stay together in Host, so u.String()
// gives the URL back for the backend's own parser.
func parseMultiHost(raw string) (*url.URL, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" || !strings.Contains(rest, ",") {
		return nil, false
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	base, err := url.Parse(scheme + "://placeholder" + tail)
	if err != nil {
		return nil, false
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo, err := url.Parse(scheme + "://" + authority[:at+1] + "placeholder")
		if err != nil {
			return nil, false
		}
		base.User = userinfo.User
		authority = authority[at+1:]
	}
	for _, h := range strings.Split(authority, ",") {
		if h == "" || strings.ContainsAny(h, " /?#@") {
			return nil, false
		}
	}
	base.Host = authority
	return base, true
}

// redact hides a password in a URL for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}

// RedactURL returns raw with any password replaced by "xxxxx".
func RedactURL(raw string) string { return redact(raw) }
