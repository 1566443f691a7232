-- Long-term memory (package longterm): one row per item, under its
-- namespace's path (longterm.PathOrder) and key. The text is kept as
-- bytes (a text may hold any UTF-8, NUL included) and indexed in tsv, a
-- tsvector the store builds from the text's tokens as longterm.Tokens
-- splits them, with their positions (for phrases), searched through a GIN
-- index. The vector is float32s, little-endian; cosine is computed by the
-- store. Times are Unix nanoseconds, 0 for none. Versions come from one
-- sequence, so an item's version grows across deletes.

CREATE TABLE longterm_items (
    id             bigserial PRIMARY KEY,
    namespace      text COLLATE "C" NOT NULL,
    path           text COLLATE "C" NOT NULL,
    key            text COLLATE "C" NOT NULL,
    value          text   NOT NULL,
    text           bytea  NOT NULL,
    tsv            tsvector NOT NULL,
    labels         jsonb  NOT NULL DEFAULT '{}',
    vector         bytea,
    vector_model   text   NOT NULL DEFAULT '',
    source_session text   NOT NULL DEFAULT '',
    source_seq     bigint NOT NULL DEFAULT 0,
    version        bigint NOT NULL,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL,
    expires_at     bigint NOT NULL DEFAULT 0,
    UNIQUE (path, key)
);

CREATE INDEX longterm_items_tsv ON longterm_items USING gin (tsv);
CREATE INDEX longterm_items_expiry ON longterm_items (expires_at) WHERE expires_at > 0;
CREATE SEQUENCE longterm_revision;
