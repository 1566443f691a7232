package longterm

import (
	"context"
	"time"
)

// Store holds long-term memory items. Every backend implements the same
// contract and passes the conformance suite in longterm/lttest.
//
// All methods are safe for concurrent use by many goroutines and, for the
// backends that share data between processes (file, sqlite and the server
// backends), by many processes. Every method returns cairn.ErrClosed after
// Close. A method given a namespace, key, prefix, label, cursor or option
// that breaks the rules returns an error wrapping ErrInvalid that names
// what is wrong and where, and changes nothing. An expired item is, to
// every method, an item that does not exist.
type Store interface {
	// Put creates the item, or replaces the one under its namespace and
	// key, all at once: a reader sees the old item or the new one, never
	// a mix. It returns the item as stored, with its new Version, times
	// and expiry. opts.IfVersion makes it conditional: of writers racing
	// with the same expected version exactly one wins, and ErrConflict
	// always means that nothing was written. A store with an Embedder
	// computes the vector before it writes; the Embedder's error fails the
	// Put. It returns cairn.ErrTooLarge for a Value and Text larger than
	// Options.MaxItemSize together.
	Put(ctx context.Context, item Item, opts PutOptions) (*Item, error)

	// Get returns the item under namespace and key, with its vector. It
	// returns ErrNotFound for an item that was never put, was deleted or
	// has expired.
	Get(ctx context.Context, namespace, key string) (*Item, error)

	// Delete erases the item under namespace and key: its value, text,
	// index entries and vector. ifVersion 0 deletes whatever is stored; a
	// positive ifVersion deletes only an item of that version
	// (ErrConflict otherwise, deleting nothing). It returns ErrNotFound
	// when there is no item to delete.
	Delete(ctx context.Context, namespace, key string, ifVersion int64) error

	// DeleteNamespace erases every item of the namespace prefix and of
	// the namespaces under it ("users/ada" erases "users/ada" and
	// "users/ada/notes", not "users/adam"), with their index entries and
	// vectors, and returns how many live items it erased (expired ones go
	// too, uncounted). The prefix must not be empty. A Put that races
	// with it lands before (and is erased) or after (and stays).
	DeleteNamespace(ctx context.Context, prefix string) (int, error)

	// List returns the live items under opts.Prefix, in namespace order
	// (PathOrder) then by key, a page at a time. A page's Next resumes after its last
	// item, so items put or deleted between pages do not make others
	// repeat or go missing.
	List(ctx context.Context, opts ListOptions) (*ListPage, error)

	// Namespaces returns the namespaces under opts.Prefix that hold at
	// least one live item, in PathOrder, a page at a time.
	Namespaces(ctx context.Context, opts NamespaceOptions) (*NamespacePage, error)

	// Search returns the live items under opts.Prefix with opts.Labels
	// that best match the query text, the query vector, or both (see
	// SearchOptions and Result), best first, at most opts.Limit. It
	// returns an empty result, not an error, when nothing matches or the
	// query holds no word. It returns an error wrapping ErrInvalid for a
	// search with neither a query nor a vector, or a vector search with
	// no vector to compare.
	Search(ctx context.Context, opts SearchOptions) ([]Result, error)

	// Close releases the store's resources. It is safe to call twice.
	Close() error
}

// Sweeper is an optional Store ability: purge expired items now. Stores
// without it purge expired items when they next write the namespace, or
// never; either way an expired item is invisible at once.
type Sweeper interface {
	// Sweep erases every expired item, as Delete would, and returns how
	// many it erased.
	Sweep(ctx context.Context) (int, error)
}

// Options are the options every backend takes.
type Options struct {
	// Now is the store's clock, for times and expiry; nil means time.Now.
	Now func() time.Time
	// Embedder computes the vectors of items that Put is given without
	// one, and of queries that Search is given without one. Nil: items
	// have the vectors they are given, and a search compares only a
	// vector it is given.
	Embedder Embedder
	// MaxItemSize bounds an item's Value and Text together, in bytes:
	// 0 means DefaultMaxItemSize.
	MaxItemSize int
	// Sealed opens an encrypted store as it is stored, for a wrapper that
	// opens the sealed form itself (crypt.WrapLongTerm). Without it, Open
	// refuses such a store (ErrEncrypted).
	Sealed bool
	// Namespace is the session namespace the memory belongs to, on the
	// backends that keep one memory per session namespace (every one but
	// memory, whose store is the process's), when the URL has no
	// namespace parameter; empty means cairn.DefaultNamespace.
	Namespace string
}

// WithDefaults returns o with the zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxItemSize <= 0 {
		o.MaxItemSize = DefaultMaxItemSize
	}
	return o
}
