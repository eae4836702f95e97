-- Memories kept across runs: one row per path of a scope (a user, a
-- project or an agent), with the run and step that last wrote it.
CREATE TABLE memories (
    id TEXT COLLATE "C" PRIMARY KEY,
    scope_kind TEXT NOT NULL,
    scope_id TEXT COLLATE "C" NOT NULL,
    path TEXT COLLATE "C" NOT NULL,
    text TEXT NOT NULL,
    source_run TEXT,
    source_step TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    expires_at BIGINT,
    UNIQUE (scope_kind, scope_id, path)
);
