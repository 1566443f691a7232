-- The foreign key and the text index of session_text (0008), added after
-- 0008 wrote the rows of the events already stored.
--
-- The index has no pending list, as longterm_items_tsv (0007): a search's
-- cost follows its matches, not the appends since the last vacuum. An
-- append writes each distinct word of its texts into the index at once.

ALTER TABLE session_text ADD FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE;

CREATE INDEX session_text_tsv ON session_text USING gin (tsv) WITH (fastupdate = off);
