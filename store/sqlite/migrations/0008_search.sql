-- Search across sessions (cairn.Searcher): the text of each event that
-- has one (cairn.Event.SearchText with at least one token), one row per
-- event, written by Append in the transaction that inserts the event.
-- The key is a rowid alias, so that the text index's rowids stay valid
-- across a VACUUM; the unique index finds an event's text.
CREATE TABLE search_texts (
	id         INTEGER PRIMARY KEY,
	namespace  TEXT    NOT NULL,
	session_id TEXT    NOT NULL,
	seq        INTEGER NOT NULL,
	text       TEXT    NOT NULL
);

CREATE UNIQUE INDEX search_texts_by_event ON search_texts (namespace, session_id, seq);

-- The text index: FTS5 over search_texts, ranked with bm25. Its content is
-- the table's (FTS5 keeps no copy of the text). Append indexes the texts
-- it inserted with one INSERT … SELECT per transaction: FTS5 writes the
-- terms of each statement as a segment of its own, and one row at a time
-- would make a segment of each event. The trigger below deletes a text's
-- entries with the row, through the 'delete' command and the text they
-- were made from; secure-delete takes the tokens out of the index's pages
-- at once, rather than leave them in older segments until a merge, so
-- that an erased session's words are nowhere in the file. The tokenizer
-- keeps diacritics, as longterm.Tokens does (as longterm_text).
CREATE VIRTUAL TABLE search_index USING fts5(
	text, content = 'search_texts', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 0'
);
INSERT INTO search_index (search_index, rank) VALUES ('secure-delete', 1);

CREATE TRIGGER search_texts_deleted AFTER DELETE ON search_texts
BEGIN
	INSERT INTO search_index (search_index, rowid, text) VALUES ('delete', OLD.id, OLD.text);
END;

-- An event's text goes with its row, however the row goes: the erasures
-- of the store (the sessions' foreign key deletes their events), and a
-- row deleted from outside (a trigger runs whether or not that connection
-- enforces foreign keys, which the sqlite3 shell does not by default).
CREATE TRIGGER events_deleted_text AFTER DELETE ON events
BEGIN
	DELETE FROM search_texts WHERE namespace = OLD.namespace AND session_id = OLD.session_id AND seq = OLD.seq;
END;

-- The events already stored are indexed by a step in Go that follows
-- this file in the same transaction (migrate.go, indexEvents): SQL cannot
-- tell an event's text.
