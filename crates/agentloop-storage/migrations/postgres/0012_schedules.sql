-- Schedules: a cron expression in a time zone that starts an agent run on
-- a task. `next_fire_at` is the tick due next; a tick is claimed by moving
-- it on in one conditional update, so each tick fires once.
CREATE TABLE schedules (
    id TEXT COLLATE "C" PRIMARY KEY,
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    task_id TEXT COLLATE "C" NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    cron TEXT NOT NULL,
    time_zone TEXT NOT NULL,
    agent TEXT NOT NULL,
    prompt TEXT,
    paused BOOLEAN NOT NULL,
    next_fire_at BIGINT NOT NULL,
    last_fired_at BIGINT,
    last_outcome TEXT,
    created_by TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX schedules_by_project ON schedules (project_id, created_at);
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE paused = FALSE;
