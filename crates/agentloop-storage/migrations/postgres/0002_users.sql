CREATE TABLE users (
    id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX users_by_created ON users(created_at, id);

CREATE TABLE user_tokens (
    token_hash TEXT COLLATE "C" PRIMARY KEY,
    user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL
);
CREATE INDEX user_tokens_by_user ON user_tokens(user_id);

-- Servers used to keep users as files of the reserved project
-- `agentloop-server-users`: `/users/<id>.json` held a user and
-- `/tokens/<sha256>` the id of the token's user. Carry them over and drop
-- the project.
INSERT INTO users (id, name, created_at)
SELECT doc->>'id', doc->>'name', (doc->>'created_at')::BIGINT
FROM (
    SELECT convert_from(data, 'UTF8')::JSONB AS doc
    FROM files
    WHERE project_id = 'agentloop-server-users' AND kind = 'file'
      AND left(path, 7) = '/users/'
) AS old_users
ON CONFLICT DO NOTHING;

INSERT INTO user_tokens (token_hash, user_id, created_at)
SELECT token_hash, user_id, modified_at
FROM (
    SELECT substr(path, 9) AS token_hash,
           convert_from(data, 'UTF8')::JSONB->>'user_id' AS user_id,
           modified_at
    FROM files
    WHERE project_id = 'agentloop-server-users' AND kind = 'file'
      AND left(path, 8) = '/tokens/'
) AS old_tokens
WHERE user_id IN (SELECT id FROM users)
ON CONFLICT DO NOTHING;

DELETE FROM projects WHERE id = 'agentloop-server-users';
