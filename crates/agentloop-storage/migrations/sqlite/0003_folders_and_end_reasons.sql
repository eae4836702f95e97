ALTER TABLE agent_runs ADD COLUMN end_reason TEXT;

-- Force-completed runs were stored as completed; nothing tells them apart
-- now, so they stay as they are.

CREATE TABLE project_folders (
    project_id TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    path TEXT NOT NULL UNIQUE
);

-- One row that every folder claim writes first, so claims run one at a time.
CREATE TABLE project_folder_lock (
    id INTEGER PRIMARY KEY,
    claims BIGINT NOT NULL
);
INSERT INTO project_folder_lock (id, claims) VALUES (1, 0);

-- Projects created before folders were claimed keep the folder they name;
-- where two named the same folder, the older keeps it.
INSERT INTO project_folders (project_id, path)
SELECT id, json_extract(settings, '$.repo_folder')
FROM projects
WHERE json_extract(settings, '$.repo_folder') IS NOT NULL
ORDER BY created_at, id
ON CONFLICT DO NOTHING;
