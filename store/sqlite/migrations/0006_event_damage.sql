-- Damage to a session's events, recorded when it is done. The store only
-- ever inserts event rows, and erases a session's events after its row
-- (Delete, Sweep, Create over an expired session): an event row deleted
-- or changed while its session's row is there was deleted or changed by
-- something else (the sqlite3 shell, another program), and the history
-- it belonged to has a gap or an event that is not what was appended.
-- These triggers mark the session damaged in its row, the first time:
-- status 'damaged' (so that List, which reads only the sessions table,
-- shows it so at once, through the indexes it walks), and damage saying
-- which seq and how. Load, Append and Check refuse a session so marked.
-- They cost nothing to an append, which deletes and changes no event row;
-- an erasure of N events runs the delete trigger N times, each finding
-- the session's row gone: about 5 us an event (BenchmarkDelete).
ALTER TABLE sessions ADD COLUMN damage TEXT NOT NULL DEFAULT '';

CREATE TRIGGER events_deleted AFTER DELETE ON events
BEGIN
	UPDATE sessions SET status = 'damaged',
		damage = 'the event of seq ' || OLD.seq || ' was deleted from the events table'
		WHERE namespace = OLD.namespace AND id = OLD.session_id AND damage = '';
END;

CREATE TRIGGER events_changed AFTER UPDATE ON events
BEGIN
	UPDATE sessions SET status = 'damaged',
		damage = 'the event of seq ' || OLD.seq || ' was changed in the events table'
		WHERE namespace = OLD.namespace AND id = OLD.session_id AND damage = '';
END;
