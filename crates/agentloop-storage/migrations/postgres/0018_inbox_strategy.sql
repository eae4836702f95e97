-- How each waiting message was sent (`enqueue` or `interrupt`), so that
-- what shows it after a reload says whether it interrupted a step.
ALTER TABLE inbox_messages ADD COLUMN strategy TEXT NOT NULL DEFAULT 'enqueue';
