/// Row decoding for this driver.
mod rows {
    use agentloop_types::EntryKind;
    use sqlx::Row;

    use super::DbRow;
    use crate::codec::to_u64;
    use crate::error::StorageResult;
    use crate::model::{
        AgentRun, AgentRunDecision, AgentRunStatus, ApprovalMode, AgentType, Attachment, AttachmentMeta, Chat, Checkpoint,
        Conversation, FileRecord, MinionLink, Project, RunRecord, RunStatus, StoredMessage, Task,
        TaskChain, User, UserToken,
    };
    use crate::sql::{bad_value, db_err};
    use crate::store::from_json_text;

    fn text(row: &DbRow, column: &str) -> StorageResult<String> {
        row.try_get::<String, _>(column).map_err(db_err)
    }

    fn opt_text(row: &DbRow, column: &str) -> StorageResult<Option<String>> {
        row.try_get::<Option<String>, _>(column).map_err(db_err)
    }

    fn int(row: &DbRow, column: &str) -> StorageResult<i64> {
        row.try_get::<i64, _>(column).map_err(db_err)
    }

    fn opt_int(row: &DbRow, column: &str) -> StorageResult<Option<i64>> {
        row.try_get::<Option<i64>, _>(column).map_err(db_err)
    }

    fn opt_json<T: serde::de::DeserializeOwned>(
        row: &DbRow,
        column: &str,
    ) -> StorageResult<Option<T>> {
        opt_text(row, column)?
            .map(|t| from_json_text(&t))
            .transpose()
    }

    pub(super) fn project(row: &DbRow) -> StorageResult<Project> {
        Ok(Project {
            id: text(row, "id")?,
            name: text(row, "name")?,
            settings: from_json_text(&text(row, "settings")?)?,
            approval_mode: opt_text(row, "approval_mode")?
                .map(|mode| {
                    ApprovalMode::parse(&mode).ok_or_else(|| bad_value("approval_mode", &mode))
                })
                .transpose()?,
            created_at: int(row, "created_at")?,
            updated_at: int(row, "updated_at")?,
        })
    }

    pub(super) fn chat(row: &DbRow) -> StorageResult<Chat> {
        let minion = match (
            opt_text(row, "parent_chat_id")?,
            opt_text(row, "parent_tool_use_id")?,
        ) {
            (Some(parent_chat_id), tool_use_id) => Some(MinionLink {
                parent_chat_id,
                tool_use_id: tool_use_id.unwrap_or_default(),
            }),
            (None, _) => None,
        };
        Ok(Chat {
            id: text(row, "id")?,
            project_id: text(row, "project_id")?,
            title: text(row, "title")?,
            settings: from_json_text(&text(row, "settings")?)?,
            totals: from_json_text(&text(row, "totals")?)?,
            minion,
            created_at: int(row, "created_at")?,
            updated_at: int(row, "updated_at")?,
        })
    }

    pub(super) fn message(row: &DbRow) -> StorageResult<StoredMessage> {
        Ok(StoredMessage {
            seq: to_u64(int(row, "seq")?)?,
            message: from_json_text(&text(row, "body")?)?,
        })
    }

    pub(super) fn checkpoint(row: &DbRow) -> StorageResult<Checkpoint> {
        Ok(Checkpoint {
            chat_id: text(row, "chat_id")?,
            name: text(row, "name")?,
            message_seq: opt_int(row, "message_seq")?.map(to_u64).transpose()?,
            totals: from_json_text(&text(row, "totals")?)?,
            created_at: int(row, "created_at")?,
        })
    }

    pub(super) fn attachment_meta(row: &DbRow) -> StorageResult<AttachmentMeta> {
        Ok(AttachmentMeta {
            id: text(row, "id")?,
            project_id: text(row, "project_id")?,
            chat_id: opt_text(row, "chat_id")?,
            media_type: text(row, "media_type")?,
            name: opt_text(row, "name")?,
            size: to_u64(int(row, "size")?)?,
            created_at: int(row, "created_at")?,
        })
    }

    pub(super) fn attachment(row: &DbRow) -> StorageResult<Attachment> {
        Ok(Attachment {
            meta: attachment_meta(row)?,
            data: row.try_get::<Vec<u8>, _>("data").map_err(db_err)?,
        })
    }

    pub(super) fn kind_name(kind: EntryKind) -> &'static str {
        match kind {
            EntryKind::File => "file",
            EntryKind::Directory => "dir",
        }
    }

    pub(super) fn file(row: &DbRow) -> StorageResult<FileRecord> {
        let kind = match text(row, "kind")?.as_str() {
            "file" => EntryKind::File,
            "dir" => EntryKind::Directory,
            other => return Err(bad_value("kind", other)),
        };
        Ok(FileRecord {
            path: text(row, "path")?,
            kind,
            data: row.try_get::<Vec<u8>, _>("data").map_err(db_err)?,
            modified_at: int(row, "modified_at")?,
        })
    }

    pub(super) fn run(row: &DbRow) -> StorageResult<RunRecord> {
        let status = text(row, "status")?;
        Ok(RunRecord {
            id: text(row, "id")?,
            chat_id: opt_text(row, "chat_id")?,
            status: RunStatus::parse(&status).ok_or_else(|| bad_value("status", &status))?,
            state: opt_json(row, "state")?,
            result: opt_json(row, "result")?,
            pending_tool_call: opt_json(row, "pending_tool_call")?,
            end_reason: opt_json(row, "end_reason")?,
            lease_owner: opt_text(row, "lease_owner")?,
            lease_expires_at: opt_int(row, "lease_expires_at")?,
            created_at: int(row, "created_at")?,
            updated_at: int(row, "updated_at")?,
        })
    }

    pub(super) fn task(row: &DbRow) -> StorageResult<Task> {
        Ok(Task {
            id: text(row, "id")?,
            project_id: text(row, "project_id")?,
            title: text(row, "title")?,
            workflow_complete: row
                .try_get::<bool, _>("workflow_complete")
                .map_err(db_err)?,
            chain: TaskChain {
                started_at: opt_int(row, "chain_started_at")?,
                end: opt_json(row, "chain_end")?,
            },
            created_at: int(row, "created_at")?,
            updated_at: int(row, "updated_at")?,
        })
    }

    pub(super) fn agent_run_decision(row: &DbRow) -> StorageResult<AgentRunDecision> {
        Ok(AgentRunDecision {
            call_id: text(row, "call_id")?,
            decision: from_json_text(&text(row, "decision")?)?,
            decided_at: int(row, "decided_at")?,
        })
    }

    pub(super) fn agent_run(row: &DbRow) -> StorageResult<AgentRun> {
        let agent_type = text(row, "agent_type")?;
        let status = text(row, "status")?;
        Ok(AgentRun {
            id: text(row, "id")?,
            task_id: text(row, "task_id")?,
            agent_type: AgentType::parse(&agent_type)
                .ok_or_else(|| bad_value("agent_type", &agent_type))?,
            status: AgentRunStatus::parse(&status).ok_or_else(|| bad_value("status", &status))?,
            conversation_id: opt_text(row, "conversation_id")?,
            created_at: int(row, "created_at")?,
            completed_at: opt_int(row, "completed_at")?,
            end_reason: opt_text(row, "end_reason")?
                .map(|text| from_json_text(&text))
                .transpose()?,
        })
    }

    pub(super) fn conversation(row: &DbRow) -> StorageResult<Conversation> {
        Ok(Conversation {
            id: text(row, "id")?,
            task_id: text(row, "task_id")?,
            chat_id: opt_text(row, "chat_id")?,
            session_id: opt_text(row, "session_id")?,
            created_at: int(row, "created_at")?,
        })
    }

    /// A token of a row that also holds its user's `id`, `name` and
    /// `created_at` (the token's own times as `token_created_at` and
    /// `expires_at`).
    pub(super) fn user_token(row: &DbRow) -> StorageResult<UserToken> {
        Ok(UserToken {
            token_hash: text(row, "token_hash")?,
            user_id: text(row, "user_id")?,
            created_at: int(row, "token_created_at")?,
            expires_at: opt_int(row, "expires_at")?,
        })
    }

    pub(super) fn user(row: &DbRow) -> StorageResult<User> {
        Ok(User {
            id: text(row, "id")?,
            name: text(row, "name")?,
            created_at: int(row, "created_at")?,
        })
    }
}
