-- Messages sent to a chat's run while it goes on, kept from their arrival
-- until a run's stored state holds them (`delivered_at`), oldest first.
CREATE TABLE inbox_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_id TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    delivered_at BIGINT,
    UNIQUE (chat_id, id)
);
CREATE INDEX inbox_messages_waiting ON inbox_messages (chat_id, seq)
    WHERE delivered_at IS NULL;
