-- Long-term memory (package longterm, the LongTerm type): one row per
-- item, in every namespace of the file (long-term namespaces are slash
-- paths of their own, unrelated to the session namespaces above). Times
-- are Unix nanoseconds (UTC); expires_at 0 means never. value is the
-- compacted JSON, labels a JSON object, vector the float32s little-endian.
-- path is the namespace with each '/' a space (longterm.PathOrder): its
-- index serves List's order and a prefix as one range. ns_index names the
-- namespace and each prefix of it with a token (a hash) for the text
-- index, so that a search under a prefix is one MATCH.
CREATE TABLE longterm_items (
	id             INTEGER PRIMARY KEY,
	namespace      TEXT    NOT NULL,
	key            TEXT    NOT NULL,
	value          TEXT    NOT NULL,
	text           TEXT    NOT NULL DEFAULT '',
	labels         TEXT    NOT NULL DEFAULT '{}',
	vector         BLOB,
	vector_model   TEXT    NOT NULL DEFAULT '',
	source_session TEXT    NOT NULL DEFAULT '',
	source_seq     INTEGER NOT NULL DEFAULT 0,
	version        INTEGER NOT NULL,
	created_at     INTEGER NOT NULL,
	updated_at     INTEGER NOT NULL,
	expires_at     INTEGER NOT NULL DEFAULT 0,
	ns_index       TEXT    NOT NULL DEFAULT '',
	path           TEXT    GENERATED ALWAYS AS (replace(namespace, '/', ' ')) VIRTUAL
);

CREATE UNIQUE INDEX longterm_items_by_path ON longterm_items (path, key);

-- Sweep: the items that can expire.
CREATE INDEX longterm_items_by_expiry ON longterm_items (expires_at) WHERE expires_at > 0;

-- The text index: FTS5 over each item's text, and the tokens of its
-- namespace's prefixes (ns_index), by the item's rowid. A search matches
-- its words in the text column and its prefix's token in the ns_index
-- column, so that FTS5 ranks only the items under the prefix; the rank
-- weighs the text alone (bm25 with weights 1 and 0). Its content is the
-- items table's (the text is stored once); the store keeps it in step,
-- deleting an item's entry with the 'delete' command and the values it
-- indexed. secure-delete makes a delete take the item's tokens out of the
-- index's pages at once, rather than leave them in older segments until a
-- merge, so that an erased text is nowhere in the file. (A contentless
-- table cannot: it does not know which tokens a deleted row had, and only
-- records the row as deleted.) The tokenizer keeps diacritics, as
-- longterm.Tokens does.
CREATE VIRTUAL TABLE longterm_text USING fts5(
	text, ns_index, content = 'longterm_items', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 0'
);
INSERT INTO longterm_text (longterm_text, rank) VALUES ('rank', 'bm25(1.0, 0.0)');
INSERT INTO longterm_text (longterm_text, rank) VALUES ('secure-delete', 1);

-- The last version given to any item: every Put takes the next, so that a
-- version is never given twice to one namespace and key, even after a
-- delete (longterm.Item.Version).
CREATE TABLE longterm_revision (
	id       INTEGER PRIMARY KEY CHECK (id = 1),
	revision INTEGER NOT NULL
);
INSERT INTO longterm_revision (id, revision) VALUES (1, 0);
