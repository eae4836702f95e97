-- Why a run ended, as its host decided (a failure's kind, a person's cancel).
ALTER TABLE runs ADD COLUMN end_reason TEXT;

-- An agent run's status is its run record's: the move of the record moves
-- the agent run in the same transaction, so the two never disagree and
-- nothing re-syncs them. An agent run a person ended (cancel, Mark Done)
-- keeps that end; the record's end follows it there.
CREATE FUNCTION agent_run_follows_its_record() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agent_runs SET
        status = CASE NEW.status
            WHEN 'pending' THEN 'running'
            WHEN 'suspended' THEN 'waiting'
            ELSE NEW.status
        END,
        completed_at = CASE
            WHEN NEW.status IN ('completed', 'failed', 'cancelled') THEN NEW.updated_at
        END,
        end_reason = CASE
            WHEN NEW.status IN ('completed', 'failed', 'cancelled') THEN NEW.end_reason
        END
    WHERE id = NEW.id AND status IN ('running', 'waiting');
    RETURN NULL;
END;
$$;

CREATE TRIGGER agent_run_follows_its_record
AFTER UPDATE OF status ON runs
FOR EACH ROW
WHEN (NEW.status IS DISTINCT FROM OLD.status)
EXECUTE FUNCTION agent_run_follows_its_record();
