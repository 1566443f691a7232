-- The search index is brought up to date in batches rather than by each
-- append. Append inserts an event's text with pending = 1, which costs a
-- row; FTS5 writes a segment for every transaction that adds to it, which
-- cost the append more than the rest of its work together. The pending
-- texts go into the index, and pending back to 0, in one transaction
-- (search.go, indexPending): before every search that finds any, and after
-- every indexEvery texts an open store has appended. A search therefore
-- sees every text committed before it began, as before.
--
-- A pending text is in no segment, so its row leaves without FTS5's
-- 'delete' command (which would take tokens the index does not hold).
ALTER TABLE search_texts ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;

CREATE INDEX search_texts_pending ON search_texts (id) WHERE pending;

DROP TRIGGER search_texts_deleted;

CREATE TRIGGER search_texts_deleted AFTER DELETE ON search_texts WHEN NOT OLD.pending
BEGIN
	INSERT INTO search_index (search_index, rowid, text) VALUES ('delete', OLD.id, OLD.text);
END;
