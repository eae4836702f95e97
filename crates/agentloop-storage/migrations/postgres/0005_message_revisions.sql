-- Every change to a chat's messages is numbered, so a reader holding a
-- decoded copy reads only what changed since: `message_rev` counts appends
-- and in-place replacements (each message row keeps the number of its
-- last write in `rev`), `message_resets` counts deletions and restores.
ALTER TABLE chats ADD COLUMN message_rev BIGINT NOT NULL DEFAULT 0;
ALTER TABLE chats ADD COLUMN message_resets BIGINT NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN rev BIGINT NOT NULL DEFAULT 0;
CREATE INDEX messages_by_rev ON messages(chat_id, rev);
