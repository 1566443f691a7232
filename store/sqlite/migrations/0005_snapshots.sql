-- Snapshots: each session's latest snapshot (cairn.Snapshotter), the seq
-- of the last event folded into it and its bytes, which the store does
-- not read. One row per session at most; erased with the session's row,
-- in the same transaction (and by the foreign key, should a row be
-- deleted otherwise). A rowid table: its rows are large, and WITHOUT
-- ROWID tables are for small ones.
CREATE TABLE snapshots (
	namespace  TEXT    NOT NULL,
	session_id TEXT    NOT NULL,
	seq        INTEGER NOT NULL,
	data       BLOB    NOT NULL,
	PRIMARY KEY (namespace, session_id),
	FOREIGN KEY (namespace, session_id) REFERENCES sessions (namespace, id) ON DELETE CASCADE
);
