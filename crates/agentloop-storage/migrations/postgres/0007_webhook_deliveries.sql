-- Each project's webhook delivery log: one row per event sent to one URL,
-- its attempts as a JSON array.
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    event TEXT NOT NULL,
    url TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_by_project ON webhook_deliveries (project_id, created_at, id);
