package storeurl

import (
	"context"
	"net/url"
	"slices"
	"sync"
)

// Registry maps URL schemes to the openers of the backends that registered
// them, for cairn.Open (stores of options O) and longterm.Open alike. It
// is safe for concurrent use.
type Registry[O, S any] struct {
	pkg  string // the registering package's name, for the panics of Register
	mu   sync.RWMutex
	open map[string]func(ctx context.Context, u *url.URL, opts O) (S, error)
}

// NewRegistry returns an empty registry whose Register panics in the name
// of package pkg.
func NewRegistry[O, S any](pkg string) *Registry[O, S] {
	return &Registry[O, S]{pkg: pkg, open: map[string]func(context.Context, *url.URL, O) (S, error){}}
}

// Register records open for scheme. It panics if the scheme is registered
// twice or open is nil, as database/sql.Register does.
func (r *Registry[O, S]) Register(scheme string, open func(ctx context.Context, u *url.URL, opts O) (S, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if open == nil {
		panic(r.pkg + ": Register opener is nil")
	}
	if _, dup := r.open[scheme]; dup {
		panic(r.pkg + ": Register called twice for scheme " + scheme)
	}
	r.open[scheme] = open
}

// Opener returns the opener registered for scheme, and whether there is
// one.
func (r *Registry[O, S]) Opener(scheme string) (func(ctx context.Context, u *url.URL, opts O) (S, error), bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	open, ok := r.open[scheme]
	return open, ok
}

// Schemes returns the registered URL schemes, sorted.
func (r *Registry[O, S]) Schemes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := make([]string, 0, len(r.open))
	for k := range r.open {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}
