-- An agent run waiting for a person keeps its task's one active slot.
DROP INDEX agent_runs_one_running;
CREATE UNIQUE INDEX agent_runs_one_active ON agent_runs(task_id)
    WHERE status IN ('running', 'waiting');

-- Decisions on the calls a waiting run waits on, kept until it resumes.
CREATE TABLE agent_run_decisions (
    agent_run_id TEXT COLLATE "C" NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE,
    call_id TEXT COLLATE "C" NOT NULL,
    decision TEXT NOT NULL,
    decided_at BIGINT NOT NULL,
    PRIMARY KEY (agent_run_id, call_id)
);
