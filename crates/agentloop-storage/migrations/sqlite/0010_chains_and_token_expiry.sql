-- Where each task's chain of agent runs stands: when a person last started
-- one of its agents, and why a bound ended the chain (JSON, or NULL).
ALTER TABLE tasks ADD COLUMN chain_started_at BIGINT;
ALTER TABLE tasks ADD COLUMN chain_end TEXT;

-- When a bearer token stops authenticating (Unix ms, NULL: never).
ALTER TABLE user_tokens ADD COLUMN expires_at BIGINT;
