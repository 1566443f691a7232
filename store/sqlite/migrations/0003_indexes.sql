-- List by status: one range of this index per status, already in List
-- order, so a status with few or no sessions costs what its sessions cost.
CREATE INDEX sessions_by_status ON sessions (namespace, status, updated_at DESC, id DESC);

-- Labels, one row per label of a session, written by Create with the
-- session's row (labels never change afterwards) and erased with it. The
-- key serves the erasure; sessions_labels_by_value finds the sessions of a
-- label.
CREATE TABLE session_labels (
	namespace  TEXT NOT NULL,
	session_id TEXT NOT NULL,
	key        TEXT NOT NULL,
	value      TEXT NOT NULL,
	PRIMARY KEY (namespace, session_id, key),
	FOREIGN KEY (namespace, session_id) REFERENCES sessions (namespace, id) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE INDEX session_labels_by_value ON session_labels (namespace, key, value);

-- The labels of the sessions already stored. A row whose labels do not
-- decode (damage, reported by Load and List) adds none.
INSERT OR IGNORE INTO session_labels (namespace, session_id, key, value)
	SELECT s.namespace, s.id, j.key, j.value
	FROM sessions AS s, json_each(CASE WHEN json_valid(s.labels) AND json_type(s.labels) = 'object'
		THEN s.labels ELSE '{}' END) AS j
	WHERE j.type = 'text';
