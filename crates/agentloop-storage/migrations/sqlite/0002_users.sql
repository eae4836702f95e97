CREATE TABLE users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX users_by_created ON users(created_at, id);

CREATE TABLE user_tokens (
    token_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL
);
CREATE INDEX user_tokens_by_user ON user_tokens(user_id);

-- Servers used to keep users as files of the reserved project
-- `agentloop-server-users`: `/users/<id>.json` held a user and
-- `/tokens/<sha256>` the id of the token's user. Carry them over and drop
-- the project.
INSERT INTO users (id, name, created_at)
SELECT json_extract(CAST(data AS TEXT), '$.id'),
       json_extract(CAST(data AS TEXT), '$.name'),
       json_extract(CAST(data AS TEXT), '$.created_at')
FROM files
WHERE project_id = 'agentloop-server-users' AND kind = 'file'
  AND substr(path, 1, 7) = '/users/'
ON CONFLICT DO NOTHING;

INSERT INTO user_tokens (token_hash, user_id, created_at)
SELECT substr(path, 9), json_extract(CAST(data AS TEXT), '$.user_id'), modified_at
FROM files
WHERE project_id = 'agentloop-server-users' AND kind = 'file'
  AND substr(path, 1, 8) = '/tokens/'
  AND json_extract(CAST(data AS TEXT), '$.user_id') IN (SELECT id FROM users)
ON CONFLICT DO NOTHING;

DELETE FROM projects WHERE id = 'agentloop-server-users';
