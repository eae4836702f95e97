-- A message a run logged is stored once, in its `message_created` event:
-- its row in `messages` names that event (`event_run_id`, `event_seq`)
-- and keeps an empty `body`. Rows written otherwise (imports, restores,
-- edits) keep their body and name no event.
ALTER TABLE messages ADD COLUMN event_run_id TEXT COLLATE "C";
ALTER TABLE messages ADD COLUMN event_seq BIGINT;
