-- Whether a project's server runs ask a person before writing files or
-- running code: 'ask' or 'unattended'; NULL follows the server's default.
ALTER TABLE projects ADD COLUMN approval_mode TEXT;

-- Runs stopped because their task was marked done were stored as
-- cancelled; they are force-completed, and say so in their end reason.
UPDATE agent_runs SET status = 'completed'
WHERE status = 'cancelled' AND end_reason LIKE '%"kind":"workflow_complete"%';
