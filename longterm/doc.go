// Package longterm is cairn's long-term memory: what an agent knows
// across sessions. A session remembers one conversation; a long-term store
// holds items that any session, agent or program can put, find and forget.
//
// # Quick start
//
//	import _ "github.com/cairnhq/cairn/store/sqlite" // or store/all
//
//	mem, err := longterm.Open(ctx, "sqlite:///.cairn/cairn.db", longterm.Options{
//		Embedder: longterm.HashEmbedder{}, // optional: vectors for semantic search
//	})
//	if err != nil {
//		return err
//	}
//	defer mem.Close()
//
//	_, err = mem.Put(ctx, longterm.Item{
//		Namespace: "users/ada",
//		Key:       "favorite-food",
//		Value:     json.RawMessage(`{"food":"pizza","since":2019}`),
//		Text:      "Ada's favorite food is pizza",
//		Labels:    map[string]string{"kind": "preference"},
//		Source:    longterm.Source{Session: "chat-42", Seq: 17},
//	}, longterm.PutOptions{})
//
//	results, err := mem.Search(ctx, longterm.SearchOptions{Query: "what does ada eat", Prefix: "users/ada"})
//
// # Items
//
// An item (Item) is a JSON value under a namespace and a key, with a text
// to search, labels to filter on, an optional vector, an optional expiry,
// and its provenance: the session and seq it came from when an agent saved
// it. The store gives it a version, a creation and an update time.
//
// A namespace is a slash path of segments made of the characters of a
// session ID, such as "users/ada" or "agents/support/facts"; a key is a
// name within it (ValidateNamespace, ValidateKey). Prefixes follow the
// path: "users" holds "users/ada" and "users/ada/notes", never "users2".
//
// # Writing
//
// Put creates or replaces an item at once. Versions make two writers
// safe: read an item, change it, and Put it back with
// PutOptions{IfVersion: item.Version}; if anyone wrote it in between, Put
// returns ErrConflict and writes nothing. IfAbsent creates only. A version
// is never given twice to one namespace and key, even after a delete, so
// an old version never matches a new item.
//
// # Searching
//
// Search ranks by text (BM25 over the item's Text, in the database where
// it can: SQLite's FTS5), by vector (cosine similarity, computed in cairn
// over the items the prefix and labels select), or by both. The query is
// words, never syntax: each word is a phrase of its tokens (Phrases), so
// "teal-otter-17" matches exactly that. A store with an Embedder computes
// vectors for items and queries; HashEmbedder works offline, and
// provider/openai's Embedder uses OpenAI's embedding models.
//
// # Forgetting
//
// Delete erases an item; DeleteNamespace erases a namespace and every
// namespace under it (all of a user's memories, say). Erasing removes the
// value, the text, the index entries and the vector: on the file and
// SQLite backends the item's text is then nowhere in the store's files
// (the tests look). Expired items are invisible at once and erased by
// Sweep, or when their key is written again.
//
// # Backends
//
// Backends live with the session stores of their technology (store/memory,
// store/file, store/sqlite) and register their URL scheme with Register,
// so Open reaches them by the URL that reaches their sessions. Package
// lttest is the conformance suite every backend passes. Package
// store/crypt encrypts items at rest (WrapLongTerm). docs/MEMORY.md tells
// the whole story.
package longterm
