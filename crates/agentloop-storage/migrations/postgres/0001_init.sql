CREATE TABLE projects (
    id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL,
    settings TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE chats (
    id TEXT COLLATE "C" PRIMARY KEY,
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    settings TEXT NOT NULL,
    totals TEXT NOT NULL,
    parent_chat_id TEXT COLLATE "C",
    parent_tool_use_id TEXT,
    next_seq BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (id, project_id),
    FOREIGN KEY (parent_chat_id, project_id) REFERENCES chats(id, project_id) ON DELETE CASCADE
);
CREATE INDEX chats_by_project ON chats(project_id, created_at);
CREATE INDEX chats_by_parent ON chats(parent_chat_id);

CREATE TABLE messages (
    chat_id TEXT COLLATE "C" NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    id TEXT COLLATE "C" NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (chat_id, seq),
    UNIQUE (chat_id, id)
);

CREATE TABLE checkpoints (
    chat_id TEXT COLLATE "C" NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    name TEXT COLLATE "C" NOT NULL,
    message_seq BIGINT,
    totals TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (chat_id, name)
);

CREATE TABLE attachments (
    id TEXT COLLATE "C" PRIMARY KEY,
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    chat_id TEXT COLLATE "C",
    media_type TEXT NOT NULL,
    name TEXT COLLATE "C",
    size BIGINT NOT NULL,
    data BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    FOREIGN KEY (chat_id, project_id) REFERENCES chats(id, project_id) ON DELETE CASCADE
);
CREATE INDEX attachments_by_project ON attachments(project_id, created_at);
CREATE INDEX attachments_by_chat ON attachments(chat_id);

CREATE TABLE files (
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    path TEXT COLLATE "C" NOT NULL,
    kind TEXT NOT NULL,
    data BYTEA NOT NULL,
    modified_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, path)
);

CREATE TABLE runs (
    id TEXT COLLATE "C" PRIMARY KEY,
    chat_id TEXT COLLATE "C" REFERENCES chats(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    state TEXT,
    result TEXT,
    pending_tool_call TEXT,
    lease_owner TEXT,
    lease_expires_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX runs_by_chat ON runs(chat_id, created_at);
CREATE INDEX runs_by_status ON runs(status, created_at);

CREATE TABLE run_events (
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE tasks (
    id TEXT COLLATE "C" PRIMARY KEY,
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    workflow_complete BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX tasks_by_project ON tasks(project_id, created_at);

CREATE TABLE conversations (
    id TEXT COLLATE "C" PRIMARY KEY,
    task_id TEXT COLLATE "C" NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    chat_id TEXT COLLATE "C" REFERENCES chats(id) ON DELETE SET NULL,
    session_id TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX conversations_by_task ON conversations(task_id, created_at);

CREATE TABLE agent_runs (
    id TEXT COLLATE "C" PRIMARY KEY,
    task_id TEXT COLLATE "C" NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    agent_type TEXT NOT NULL,
    status TEXT NOT NULL,
    conversation_id TEXT COLLATE "C" REFERENCES conversations(id) ON DELETE SET NULL,
    created_at BIGINT NOT NULL,
    completed_at BIGINT
);
CREATE INDEX agent_runs_by_task ON agent_runs(task_id, created_at);
CREATE INDEX agent_runs_by_status ON agent_runs(status, created_at);
CREATE UNIQUE INDEX agent_runs_one_running ON agent_runs(task_id) WHERE status = 'running';
