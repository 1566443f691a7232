-- Leases: who runs a session now, until when, and the fencing token of that
-- claim. The token comes from one sequence per namespace, so it is never
-- reused, not even by a session deleted and created again. A released or
-- never-taken lease has an empty holder. Deleting a session deletes its
-- lease with its row.

CREATE SEQUENCE lease_tokens;

ALTER TABLE sessions
    ADD COLUMN lease_holder  text        NOT NULL DEFAULT '',
    ADD COLUMN lease_token   bigint      NOT NULL DEFAULT 0,
    ADD COLUMN lease_expires timestamptz NULL;

-- Claims: the oldest unleased session first.
CREATE INDEX sessions_created_idx ON sessions (created_at, id);
