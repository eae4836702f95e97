//! ACP sessions: each one is a stored chat of the CLI (the project `agentloop
//! chat` keeps its chats in), so a session outlives the agent process and
//! `agentloop chat --chat ID` can go on with it. The folder the editor
//! opened it in is kept in the chat's settings, beside the runtime's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::SessionInfo;
use agentloop_runtime::ChatSettings;
use agentloop_storage::model::Chat;
use agentloop_storage::{StorageError, Store};
use agentloop_tools::vfs::DirJail;
use agentloop_types::{ApprovalPolicies, CancellationToken, Tool};
use serde_json::Value;

use crate::session::{CLI_PROJECT, chat_for};

/// The chat settings key holding the folder an editor opened the chat in.
const CWD_KEY: &str = "acp_cwd";

/// Why a session request failed, as the editor is told.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no session {0} in the database")]
    Unknown(String),
    #[error("the session {0} is answering another prompt; wait for it or cancel it")]
    Busy(String),
    #[error("the folder {path} cannot hold the session's files: {reason}")]
    Folder { path: String, reason: String },
    #[error("{0}")]
    Store(String),
    #[error("the editor went away: {0}")]
    Editor(String),
}

/// One open session: its chat, tools, and the turn running in it.
pub struct Session {
    pub chat_id: String,
    /// The folder as the fs tool sees it, for diffs and file locations.
    pub jail: Arc<DirJail>,
    pub tools: Vec<Arc<dyn Tool>>,
    /// The cancel token of the turn running, if one runs.
    turn: Mutex<Option<CancellationToken>>,
}

impl Session {
    /// A session on chat `chat_id` whose tools work in `jail`'s folder.
    pub fn new(chat_id: String, jail: Arc<DirJail>, tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            chat_id,
            jail,
            tools,
            turn: Mutex::new(None),
        }
    }

    /// Marks a turn running; refused while another one runs.
    pub fn begin(&self, cancel: CancellationToken) -> Result<TurnGuard<'_>, SessionError> {
        let mut turn = self
            .turn
            .lock()
            .map_err(|_| SessionError::Busy(self.chat_id.clone()))?;
        if turn.is_some() {
            return Err(SessionError::Busy(self.chat_id.clone()));
        }
        *turn = Some(cancel);
        Ok(TurnGuard { session: self })
    }

    /// Cancels the turn running, if any (ACP `session/cancel`).
    pub fn cancel(&self) {
        if let Ok(turn) = self.turn.lock()
            && let Some(cancel) = turn.as_ref()
        {
            cancel.cancel();
        }
    }
}

/// Clears the session's running turn when the turn ends, however it ends.
pub struct TurnGuard<'a> {
    session: &'a Session,
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut turn) = self.session.turn.lock() {
            *turn = None;
        }
    }
}

/// The sessions opened on this connection, by id.
#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    pub fn insert(&self, session: Arc<Session>) {
        if let Ok(mut open) = self.open.lock() {
            open.insert(session.chat_id.clone(), session);
        }
    }

    pub fn get(&self, id: &str) -> Result<Arc<Session>, SessionError> {
        self.open
            .lock()
            .ok()
            .and_then(|open| open.get(id).cloned())
            .ok_or_else(|| SessionError::Unknown(id.to_owned()))
    }
}

/// The folder a session's tools work in, checked.
pub fn jail(root: &Path) -> Result<Arc<DirJail>, SessionError> {
    DirJail::new(root)
        .map(Arc::new)
        .map_err(|e| SessionError::Folder {
            path: root.display().to_string(),
            reason: e.to_string(),
        })
}

fn store_error(e: impl std::fmt::Display) -> SessionError {
    SessionError::Store(e.to_string())
}

/// A new chat for a session opened in `cwd`.
pub async fn create(
    store: &Arc<dyn Store>,
    settings: &ChatSettings,
    cwd: &Path,
) -> Result<Chat, SessionError> {
    let mut chat = chat_for(store, None, settings).await.map_err(store_error)?;
    set_cwd(&mut chat, cwd);
    store.update_chat(&chat).await.map_err(store_error)?;
    Ok(chat)
}

/// The stored chat `id`, its approvals and folder made this agent's.
pub async fn reopen(
    store: &Arc<dyn Store>,
    id: &str,
    approvals: &ApprovalPolicies,
    cwd: &Path,
) -> Result<Chat, SessionError> {
    let mut chat = match store.get_chat(id).await {
        Ok(chat) => chat,
        Err(StorageError::NotFound { .. }) => return Err(SessionError::Unknown(id.to_owned())),
        Err(e) => return Err(store_error(e)),
    };
    if chat.project_id != CLI_PROJECT || chat.minion.is_some() {
        return Err(SessionError::Unknown(id.to_owned()));
    }
    let mut settings = ChatSettings::from_value(&chat.id, &chat.settings).map_err(store_error)?;
    settings.loop_settings.approvals = approvals.clone();
    chat.settings = serde_json::to_value(&settings).map_err(store_error)?;
    set_cwd(&mut chat, cwd);
    store.update_chat(&chat).await.map_err(store_error)?;
    Ok(chat)
}

fn set_cwd(chat: &mut Chat, cwd: &Path) {
    if let Value::Object(settings) = &mut chat.settings {
        settings.insert(CWD_KEY.to_owned(), Value::from(cwd.display().to_string()));
    }
}

/// The CLI's chats, most recently used first, as sessions; with `cwd`,
/// only those opened in that folder.
pub async fn list(
    store: &Arc<dyn Store>,
    cwd: Option<&Path>,
    fallback_cwd: &Path,
) -> Result<Vec<SessionInfo>, SessionError> {
    let mut chats = match store.list_chats(CLI_PROJECT).await {
        Ok(chats) => chats,
        Err(StorageError::NotFound { .. }) => Vec::new(),
        Err(e) => return Err(store_error(e)),
    };
    chats.retain(|chat| chat.minion.is_none());
    chats.sort_by_key(|chat| std::cmp::Reverse(chat.updated_at));
    let infos = chats
        .into_iter()
        .map(|chat| {
            let opened_in = chat
                .settings
                .get(CWD_KEY)
                .and_then(Value::as_str)
                .map_or_else(|| fallback_cwd.to_owned(), PathBuf::from);
            (chat, opened_in)
        })
        .filter(|(_, opened_in)| cwd.is_none_or(|cwd| cwd == opened_in))
        .map(|(chat, opened_in)| {
            SessionInfo::new(chat.id.clone(), opened_in)
                .title(crate::session::title(&chat, &[]))
                .updated_at(agentloop_server::ids::rfc3339(chat.updated_at))
        })
        .collect();
    Ok(infos)
}
