-- Labels in List order: one row per label of a session, carrying the
-- session's updated_at, so one range of session_labels_order_idx gives
-- the sessions of a label most recently updated first, then by ID
-- descending, and a List by label stops once its page is full. The
-- triggers below keep it: a session's labels are written when its row is
-- inserted (labels never change afterwards), and each change of its
-- updated_at (an append) is copied to them in the same statement.
-- Deleting a session deletes its labels.
CREATE TABLE session_labels (
    id         text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    key        text        NOT NULL,
    value      text        NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (id, key)
);

CREATE INDEX session_labels_order_idx ON session_labels (key, value, updated_at DESC, id DESC);

INSERT INTO session_labels (id, key, value, updated_at)
    SELECT s.id, l.key, l.value, s.updated_at
    FROM sessions AS s, jsonb_each_text(s.labels) AS l
    WHERE jsonb_typeof(s.labels) = 'object';

-- Statistics now, so that the planner weighs a label's walk against a
-- prefix's range before autovacuum comes by.
ANALYZE session_labels;

-- The functions run with the search_path of this migration (the
-- namespace's schema), whatever the caller's.
CREATE FUNCTION session_labels_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO session_labels (id, key, value, updated_at)
        SELECT NEW.id, l.key, l.value, NEW.updated_at FROM jsonb_each_text(NEW.labels) AS l;
    RETURN NULL;
END $$;

CREATE FUNCTION session_labels_follow() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE session_labels SET updated_at = NEW.updated_at WHERE id = NEW.id;
    RETURN NULL;
END $$;

CREATE TRIGGER session_labels_insert AFTER INSERT ON sessions
    FOR EACH ROW WHEN (jsonb_typeof(NEW.labels) = 'object' AND NEW.labels <> '{}')
    EXECUTE FUNCTION session_labels_insert();

CREATE TRIGGER session_labels_follow AFTER UPDATE OF updated_at ON sessions
    FOR EACH ROW WHEN (NEW.labels <> '{}' AND NEW.updated_at <> OLD.updated_at)
    EXECUTE FUNCTION session_labels_follow();

-- List by labels walks session_labels now; the GIN index served nothing
-- else, and every append paid for a new entry in it.
DROP INDEX sessions_labels_idx;
