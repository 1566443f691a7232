-- Snapshots: each session's latest snapshot (cairn.Snapshotter), the seq
-- of the last event folded into it and its bytes, which the store does
-- not read. One row per session at most. Deleting a session's row (Delete,
-- Sweep, the purge of an expired session by Create) deletes its snapshot
-- in the same statement, through the foreign key's cascade; a snapshot
-- put while its session is being deleted fails the foreign key check.

CREATE TABLE snapshots (
    session_id text COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    data       bytea  NOT NULL
);
