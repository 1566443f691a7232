-- Leases: who runs a session now, until when (Unix nanoseconds), and the
-- fencing token of that claim; an empty holder means no lease. Tokens come
-- from one counter per namespace, so they never repeat, not even for a
-- session deleted and created again. Deleting a session's row deletes its
-- lease with it.
ALTER TABLE sessions ADD COLUMN lease_holder  TEXT    NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN lease_token   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN lease_expires INTEGER NOT NULL DEFAULT 0;

CREATE TABLE lease_tokens (
	namespace TEXT    NOT NULL PRIMARY KEY,
	last      INTEGER NOT NULL
) WITHOUT ROWID;
