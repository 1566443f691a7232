-- The search index is brought up to date in batches rather than by each
-- append. FTS5 writes a segment for every transaction that adds to it,
-- which cost an append more than the rest of its work together. Append
-- now inserts an event's text only, with an id above search_state's
-- indexed: every text up to that id is in the index, every text above it
-- is pending. The pending texts go into the index in one statement, and
-- indexed up to the highest id, in one transaction (search.go,
-- indexPending): before every search that finds any, and after every
-- indexEvery texts an open store has appended. A search therefore sees
-- every text committed before it began, as before. Keeping the mark in
-- a row of its own, rather than a flag on each text, writes no index page
-- more per append.
CREATE TABLE search_state (
	id      INTEGER PRIMARY KEY CHECK (id = 1),
	indexed INTEGER NOT NULL
);

INSERT INTO search_state (id, indexed) SELECT 1, coalesce(max(id), 0) FROM search_texts;

-- A pending text is in no segment, so its row leaves without FTS5's
-- 'delete' command (which would take out tokens the index does not hold).
DROP TRIGGER search_texts_deleted;

CREATE TRIGGER search_texts_deleted AFTER DELETE ON search_texts
	WHEN OLD.id <= (SELECT indexed FROM search_state)
BEGIN
	INSERT INTO search_index (search_index, rowid, text) VALUES ('delete', OLD.id, OLD.text);
END;
