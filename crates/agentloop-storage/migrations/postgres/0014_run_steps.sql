-- A run's kept steps: its state between two steps without the messages
-- (`state`), addressed by the seq of the last event logged before it.
-- `message_count` messages of the run's history are the step's; the last
-- of them is `last_message_id`.
CREATE TABLE run_steps (
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    message_count BIGINT NOT NULL,
    last_message_id TEXT COLLATE "C",
    state TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
