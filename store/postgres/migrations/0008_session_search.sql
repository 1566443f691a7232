-- Search across sessions (cairn.Searcher): one row per event with text
-- to search (Event.SearchText with a token), written by the append's own
-- statement: the text's tokens as a tsvector (TSVector), searched through
-- a GIN index, and its length in tokens, which BM25 weighs. Deleting a
-- session deletes its rows through the foreign key's cascade.
--
-- This migration's Go step (indexEvents) writes the rows of the events
-- already stored; 0009 then adds the foreign key and the index, checked
-- and built once over all of them (row by row, the same took four times
-- as long). Appends and creates wait for the lock below until the
-- migration commits, so none lands between the read and the commit.

LOCK TABLE sessions, events IN SHARE MODE;

CREATE TABLE session_text (
    session_id text COLLATE "C" NOT NULL,
    seq        bigint   NOT NULL,
    tsv        tsvector NOT NULL,
    len        integer  NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- BM25 needs how many rows there are and how many tokens they hold:
-- session_text_totals keeps both, spread over 64 rows. A transaction adds
-- to the row of its server process (pg_backend_pid() % 64), so concurrent
-- appends seldom wait for each other; a search sums the 64. A delete of
-- rows subtracts them in the trigger below, whatever deleted them. Each
-- append updates a row in place: a low fill factor leaves room on its
-- page for the new version (a HOT update), vacuum or not.
CREATE TABLE session_text_totals (
    slot   integer PRIMARY KEY,
    docs   bigint NOT NULL DEFAULT 0,
    tokens bigint NOT NULL DEFAULT 0
) WITH (fillfactor = 10);

INSERT INTO session_text_totals (slot) SELECT generate_series(0, 63);

CREATE FUNCTION session_text_deleted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE session_text_totals AS t SET docs = t.docs - g.docs, tokens = t.tokens - g.tokens
        FROM (SELECT count(*) AS docs, coalesce(sum(len), 0) AS tokens FROM gone) AS g
        WHERE t.slot = pg_backend_pid() % 64 AND g.docs > 0;
    RETURN NULL;
END $$;

CREATE TRIGGER session_text_deleted AFTER DELETE ON session_text
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION session_text_deleted();
