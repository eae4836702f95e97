-- Where each task's chain of agent runs stands: when a person last started
-- one of its agents, and why a bound ended the chain (JSON, or NULL).
ALTER TABLE tasks ADD COLUMN chain_started_at BIGINT;
ALTER TABLE tasks ADD COLUMN chain_end TEXT;

-- When a bearer token stops authenticating (Unix ms, NULL: never).
ALTER TABLE user_tokens ADD COLUMN expires_at BIGINT;

-- The audit log: append-only, apart from projects (an entry outlives
-- what it names). `detail` is a JSON object.
CREATE TABLE audit_log (
    id TEXT COLLATE "C" PRIMARY KEY,
    at BIGINT NOT NULL,
    user_id TEXT,
    action TEXT NOT NULL,
    project_id TEXT,
    target TEXT,
    address TEXT,
    detail TEXT NOT NULL
);
CREATE INDEX audit_log_by_time ON audit_log (at, id);
CREATE INDEX audit_log_by_project ON audit_log (project_id, at);
CREATE INDEX audit_log_by_user ON audit_log (user_id, at);
