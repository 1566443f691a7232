package longterm

import (
	"encoding/json"
	"time"
)

// Item is one long-term memory: a JSON value under a namespace and a key,
// with the text that search matches, labels, an optional vector, and what
// the store records about it.
//
// Put reads Namespace, Key, Value, Text, Labels, Vector, VectorModel and
// Source; the store sets Version, CreatedAt, UpdatedAt and ExpiresAt, and
// ignores what the caller put there.
type Item struct {
	// Namespace is a slash path such as "users/ada" or
	// "agents/support/facts" (see ValidateNamespace).
	Namespace string `json:"namespace"`
	// Key names the item within its namespace (see ValidateKey).
	Key string `json:"key"`
	// Value is any JSON value. Put stores it compacted (insignificant
	// white space removed) and every read returns those bytes; an empty
	// Value is stored as null.
	Value json.RawMessage `json:"value"`
	// Text is what text search matches. When Put is given none, it is
	// made from Value: its object keys and its strings, numbers and
	// booleans, in order (DeriveText). An item whose text has no word is
	// found by List and Get, and by vector search when it has a vector,
	// never by text search.
	Text string `json:"text,omitempty"`
	// Labels are names and values that List and Search filter on.
	Labels map[string]string `json:"labels,omitempty"`
	// Vector is the item's embedding. Put keeps a vector it is given;
	// otherwise a store with an Embedder computes one from Text. Get
	// returns it; List returns it only when asked (ListOptions.Vectors),
	// Search never.
	Vector []float32 `json:"vector,omitempty"`
	// VectorModel names the space Vector lives in: the Embedder's Name
	// for a computed vector, the caller's word for a given one. A vector
	// search compares only vectors of its own model and length.
	VectorModel string `json:"vector_model,omitempty"`
	// Source is where the item came from, when an agent saved it.
	Source Source `json:"source,omitzero"`

	// Version changes with every write of the item: each Put gives the
	// item a version greater than any it had before under this namespace
	// and key, across deletes and expiry, so that a version read once is
	// never valid again after a change. Versions of different items are
	// not comparable. See PutOptions.IfVersion.
	Version int64 `json:"version"`
	// CreatedAt is when the item was created (a replace keeps it; a Put
	// after a delete or expiry starts again). UpdatedAt is when it was
	// last put. Both come from the store's clock (Options.Now).
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// ExpiresAt is when the item expires (PutOptions.TTL after its last
	// Put), or the zero time if it never does. An expired item is
	// invisible at once, whether or not the store has purged it.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// Source is the provenance of an item that an agent saved: the session
// and the seq of the event that led to it. Both are optional; Session, if
// set, follows the session ID rules (cairn.ValidateID).
type Source struct {
	Session string `json:"session,omitempty"`
	Seq     int64  `json:"seq,omitempty"`
}

// IfAbsent is PutOptions.IfVersion for a Put that only creates: it fails
// with ErrConflict when the item exists.
const IfAbsent int64 = -1

// PutOptions make a Put conditional and give the item a lifetime.
type PutOptions struct {
	// IfVersion is the version the caller expects the item to have: 0
	// puts whatever is stored (create or replace); IfAbsent only creates;
	// a positive version replaces only an item of that version. Put
	// returns ErrConflict, writing nothing, when the item is otherwise.
	IfVersion int64
	// TTL expires the item this long after this Put; 0: never. A Put
	// always sets the item's expiry afresh: replacing an item without a
	// TTL makes it permanent.
	TTL time.Duration
}

// ListOptions filter and page List.
type ListOptions struct {
	// Prefix keeps the items of the namespace Prefix and of the
	// namespaces under it ("users" holds "users" and "users/ada", not
	// "users2"). Empty: every namespace.
	Prefix string
	// Labels keeps the items that have all of these labels, with these
	// values.
	Labels map[string]string
	// Limit is the page size: 0 means DefaultListLimit, at most
	// MaxListLimit.
	Limit int
	// Cursor is a previous page's Next.
	Cursor string
	// Vectors returns each item's Vector too.
	Vectors bool
}

// ListPage is one page of List: items in namespace order (PathOrder),
// then by key (bytewise). Next is empty on the last page.
type ListPage struct {
	Items []Item
	Next  string
}

// NamespaceOptions filter and page Namespaces.
type NamespaceOptions struct {
	// Prefix keeps the namespace Prefix and those under it. Empty: all.
	Prefix string
	// Depth, when positive, cuts every namespace to its first Depth
	// segments and lists each cut once: Depth 2 under "users" lists
	// "users/ada" for "users/ada/notes" and "users/ada/facts".
	Depth int
	// Limit is the page size: 0 means DefaultListLimit, at most
	// MaxListLimit.
	Limit int
	// Cursor is a previous page's Next.
	Cursor string
}

// NamespacePage is one page of Namespaces: the namespaces that hold at
// least one live item, in PathOrder. Next is empty on the last page.
type NamespacePage struct {
	Namespaces []string
	Next       string
}

// SearchMode chooses how Search ranks.
type SearchMode string

// Search modes.
const (
	// ModeAuto is hybrid when the search has a vector (given, or computed
	// from the query by the store's Embedder), text otherwise.
	ModeAuto SearchMode = ""
	// ModeText ranks by the text score alone.
	ModeText SearchMode = "text"
	// ModeVector ranks by cosine similarity alone.
	ModeVector SearchMode = "vector"
	// ModeHybrid ranks by both (see SearchOptions.TextWeight).
	ModeHybrid SearchMode = "hybrid"
)

// SearchOptions say what Search looks for and where.
type SearchOptions struct {
	// Query is text in the user's words. Each word (a run of characters
	// between spaces) is a phrase of its tokens, so "teal-otter-17"
	// matches those three tokens in a row; an item matches when it holds
	// any of the phrases, and ranks higher the more of them it holds, the
	// rarer they are and the shorter its text (BM25). Case does not
	// matter; punctuation separates tokens; nothing in a query is
	// syntax. The first MaxQueryPhrases distinct phrases are used.
	Query string
	// Vector is a query vector, compared by cosine similarity with the
	// vectors of VectorModel and of the same length. Empty: a store with
	// an Embedder computes it from Query (and VectorModel is the
	// Embedder's Name).
	Vector      []float32
	VectorModel string
	// Mode chooses the ranking; ModeAuto by default.
	Mode SearchMode
	// TextWeight is the text score's share of a hybrid score, in [0, 1]:
	// 0 means DefaultTextWeight.
	TextWeight float64
	// Prefix and Labels filter as ListOptions' do.
	Prefix string
	Labels map[string]string
	// Limit is how many results to return at most: 0 means
	// DefaultSearchLimit, at most MaxSearchLimit.
	Limit int
}

// Result is one item a Search found, best first.
//
// Score is what the results are ordered by, in [0, 1], higher better; ties
// in List's order (of several items tied at the limit's edge, which make
// the cut is the store's choice). In text mode it is TextScore divided by the
// best TextScore of the search; in vector mode it is VectorScore (0 for a
// negative cosine); in hybrid mode it is TextWeight times the first plus
// (1 - TextWeight) times the second.
type Result struct {
	Item Item // without its Vector
	// Score is the ranking score described above.
	Score float64
	// TextScore is the item's BM25 score for the query: positive for a
	// match, 0 otherwise. It depends on the other items a store holds,
	// so compare it only within one search.
	TextScore float64
	// VectorScore is the cosine similarity of the item's vector and the
	// query's, 0 when they were not compared.
	VectorScore float64
}

// Limits and defaults.
const (
	MaxNamespaceLen    = 256     // the longest namespace, in bytes
	MaxSegmentLen      = 128     // the longest segment of a namespace (cairn.MaxIDLen)
	MaxKeyLen          = 256     // the longest key, in bytes
	MaxLabels          = 32      // the most labels an item has
	MaxLabelNameLen    = 64      // the longest label name, in bytes
	MaxLabelValueLen   = 256     // the longest label value, in bytes
	MaxVectorDims      = 8192    // the longest vector
	DefaultMaxItemSize = 1 << 20 // Options.MaxItemSize when 0: Value and Text together
	DefaultListLimit   = 100     // the page size of List and Namespaces when Limit is 0
	MaxListLimit       = 1000    // the largest page size of List and Namespaces
	DefaultSearchLimit = 10      // how many results Search returns when Limit is 0
	MaxSearchLimit     = 1000    // the most results one Search returns
	MaxQueryPhrases    = 64      // the distinct phrases of a query that count
	DefaultTextWeight  = 0.5     // SearchOptions.TextWeight when 0
)
