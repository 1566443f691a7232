-- Sessions and their events. Run with search_path set to the namespace's
-- schema, so the names below land in it.

CREATE TABLE sessions (
    id            text COLLATE "C" PRIMARY KEY,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    expires_at    timestamptz NULL,
    status        text        NOT NULL,
    steps         integer     NOT NULL DEFAULT 0,
    first_message text        NOT NULL DEFAULT '',
    labels        jsonb       NOT NULL DEFAULT '{}',
    last_seq      bigint      NOT NULL DEFAULT 0
);

-- List: most recently updated first, then by ID descending.
CREATE INDEX sessions_updated_idx ON sessions (updated_at DESC, id DESC);

-- Sweep: expired sessions.
CREATE INDEX sessions_expires_idx ON sessions (expires_at) WHERE expires_at IS NOT NULL;

-- One row per event. The envelope is the event's JSON exactly as it was
-- encoded on append (bytea, not jsonb, which would reorder keys). The primary
-- key is the backstop against two writers forking a history; deleting a
-- session deletes its events with it.
CREATE TABLE events (
    session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    envelope   bytea  NOT NULL,
    PRIMARY KEY (session_id, seq)
);
