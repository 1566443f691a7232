-- Labels in List order: each label row carries its session's updated_at,
-- so one range of session_labels_in_order gives the sessions of a label
-- most recently updated first, then by id descending, and a List with a
-- label stops once its page is full.
ALTER TABLE session_labels ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;

UPDATE session_labels SET updated_at = (SELECT s.updated_at FROM sessions AS s
	WHERE s.namespace = session_labels.namespace AND s.id = session_labels.session_id);

DROP INDEX session_labels_by_value;
CREATE INDEX session_labels_in_order ON session_labels (namespace, key, value, updated_at DESC, session_id DESC);

-- Create writes the labels with the session's updated_at; every later
-- change of it (an Append) is copied here, in the same transaction. A
-- session without labels has no rows to change, and the trigger does
-- nothing for it.
CREATE TRIGGER session_labels_follow AFTER UPDATE OF updated_at ON sessions
	WHEN NEW.labels <> '{}' AND NEW.updated_at <> OLD.updated_at
BEGIN
	UPDATE session_labels SET updated_at = NEW.updated_at
		WHERE namespace = NEW.namespace AND session_id = NEW.id;
END;
