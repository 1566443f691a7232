-- Sessions: one row per session of a namespace, holding what List shows.
-- Times are Unix nanoseconds (UTC); expires_at 0 means never.
CREATE TABLE sessions (
	namespace     TEXT    NOT NULL,
	id            TEXT    NOT NULL,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL DEFAULT 0,
	status        TEXT    NOT NULL,
	steps         INTEGER NOT NULL DEFAULT 0,
	first_message TEXT    NOT NULL DEFAULT '',
	labels        TEXT    NOT NULL DEFAULT '{}',
	last_seq      INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (namespace, id)
) WITHOUT ROWID;

-- List order: most recently updated first, then by id descending.
CREATE INDEX sessions_by_update ON sessions (namespace, updated_at DESC, id DESC);

-- Sweep: the sessions that can expire.
CREATE INDEX sessions_by_expiry ON sessions (namespace, expires_at) WHERE expires_at > 0;

-- Events: each event's JSON envelope as it was appended.
CREATE TABLE events (
	namespace  TEXT    NOT NULL,
	session_id TEXT    NOT NULL,
	seq        INTEGER NOT NULL,
	envelope   TEXT    NOT NULL,
	PRIMARY KEY (namespace, session_id, seq),
	FOREIGN KEY (namespace, session_id) REFERENCES sessions (namespace, id) ON DELETE CASCADE
);
