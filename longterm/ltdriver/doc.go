// Package ltdriver is the API for those who write a long-term memory
// backend (a longterm.Store), as package driver is for session stores:
// what every backend calls, and a program that only uses stores never
// needs.
//
// A backend's methods open with a Guard, which refuses a closed store and
// then calls the Check functions, which refuse what every store refuses
// (a bad namespace, key, label, value, option or cursor) with the same
// errors, and return the arguments normalised: a compacted value, a
// derived text, a computed vector, a resolved search.
// Stamp sets what the store records on a Put. Search ranking is shared:
// a backend finds text hits (in its database, or with Index) and vector
// hits (Cosine over the items its filters select, TopHits), and Rank
// merges them into the order every backend returns; Find runs the two
// sides a search needs and ranks them, and SearchItems does the whole of
// it for items held in memory. A server backend registers its URL schemes
// with RegisterByNamespace, and keeps its memory beside the sessions of
// SessionNamespace.
package ltdriver
