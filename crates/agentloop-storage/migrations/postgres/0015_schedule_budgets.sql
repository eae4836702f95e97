-- The schedule each agent run spends for: the run a tick started, and the
-- runs its chain started after it. A schedule's budgets apply to them.
CREATE TABLE schedule_runs (
    agent_run_id TEXT COLLATE "C" PRIMARY KEY REFERENCES agent_runs(id) ON DELETE CASCADE,
    schedule_id TEXT COLLATE "C" NOT NULL REFERENCES schedules(id) ON DELETE CASCADE
);
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule_id);

-- Holds of one budget by age: a reservation releases the holds a stopped
-- instance never settled once they are older than a bound.
CREATE INDEX budget_holds_by_budget
    ON budget_holds (scope_kind, scope_id, metric, period, created_at);

-- What a hold reserved before its age released it (its `amount` is then 0).
ALTER TABLE budget_holds ADD COLUMN released BIGINT NOT NULL DEFAULT 0;
