-- Memories kept across runs: one row per path of a scope (a user, a
-- project or an agent), with the run and step that last wrote it.
CREATE TABLE memories (
    id TEXT PRIMARY KEY,
    scope_kind TEXT NOT NULL,
    scope_id TEXT NOT NULL,
    path TEXT NOT NULL,
    text TEXT NOT NULL,
    source_run TEXT,
    source_step TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    expires_at BIGINT,
    UNIQUE (scope_kind, scope_id, path)
);
