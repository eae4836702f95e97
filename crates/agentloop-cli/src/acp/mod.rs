//! `agentloop acp`: the agent of `agentloop chat` offered to editors over
//! the Agent Client Protocol (ACP), on stdin and stdout. Sessions are the
//! CLI's stored chats (new, loaded with their history replayed, listed);
//! a prompt turn streams as session updates; approvals are the editor's
//! permission requests; `session/cancel` stops the turn. The fs tool reads
//! and writes through the editor when it offers its file system, and
//! `shell` runs in its terminal when it offers one.

mod client_fs;
mod host;
mod leases;
mod sessions;
#[cfg(target_os = "linux")]
mod terminal;
mod turn;
mod updates;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ClientCapabilities, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    PromptResponse, SessionCapabilities, SessionListCapabilities, SessionNotification,
};
use agent_client_protocol::{Agent, Client, ErrorCode, Stdio};
use agentloop_runtime::{ChatSettings, LoopSettings};
use agentloop_tools::FsTool;
use agentloop_types::{ApprovalPolicies, Hooks, Tool};
use clap::Args;

use crate::out::{Failure, Outcome};
use crate::{conversation_model, db, tools};
use client_fs::{ClientFs, Offered};
use host::Host;
use sessions::{Session, SessionError, Sessions};

#[derive(Args)]
pub struct AcpArgs {
    /// Database the sessions are kept in: a SQLite file path,
    /// `sqlite:PATH`, `postgres://...` or `memory` (default: agentloop.db
    /// in the platform data folder, shared with `agentloop chat`).
    #[arg(long)]
    pub db: Option<String>,
    /// anthropic, openai-chat, openai-responses, openai-compatible, gemini,
    /// or scripted:FILE (default: as for `chat`, the demo when nothing is
    /// configured).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id.
    #[arg(long)]
    pub model: Option<String>,
    /// The provider's base URL (default: the provider's `*_BASE_URL`).
    #[arg(long)]
    pub base_url: Option<String>,
    /// System prompt of a new session.
    #[arg(long)]
    pub system: Option<String>,
    /// Tools to offer, comma-separated (see `agentloop tool list`).
    #[arg(long, value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Folder the fs, js and shell tools work in (default: the folder the
    /// editor opens each session in).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Which tool calls run without asking: all, none or tool names,
    /// comma-separated (default: the configuration's `approve`, else
    /// none). The others are asked as the editor's permission requests.
    #[arg(long, value_name = "all|none|TOOL,...")]
    pub approve: Option<String>,
    /// Play the shipped demo conversation (also what happens when no
    /// provider is configured).
    #[arg(long, conflicts_with = "provider")]
    pub demo: bool,
    /// Answer with the local model, as `agentloop chat --local` does.
    #[arg(long, conflicts_with_all = ["demo", "provider", "base_url"])]
    pub local: bool,
}

/// Serves ACP on stdin and stdout until the editor closes stdin.
pub async fn serve(mut args: AcpArgs, approvals: ApprovalPolicies, hooks: Hooks) -> Outcome {
    let store = db::open_for_write(args.db.as_deref()).await?;
    let model = conversation_model::choose(conversation_model::Flags {
        demo: args.demo,
        local: args.local,
        provider: &mut args.provider,
        model: &mut args.model,
        base_url: &mut args.base_url,
        system: &mut args.system,
        tools: &args.tools,
    })
    .await?;
    // The memory tool keeps its files in the database, as `chat`'s does.
    let memory = crate::memories::stored(store.clone(), crate::memories::scope(None)?);
    // The tools are built once here so a bad list or root stops the
    // command, not the editor's first session.
    tools::build(
        &model.tool_names,
        args.root.as_deref(),
        Some(&model.minion),
        &memory,
    )?;
    let host = Arc::new(Host {
        store,
        memory,
        provider: model.chosen.provider.clone(),
        hooks,
        approvals: approvals.clone(),
        settings: ChatSettings {
            loop_settings: LoopSettings {
                model: Some(model.chosen.model.clone()),
                system_prompt: args.system.clone(),
                max_tokens: model.max_tokens,
                approvals,
                ..LoopSettings::default()
            },
        },
        tool_names: model.tool_names,
        minion: model.minion,
        root: args.root.clone(),
        lease_owner: leases::owner(),
        client: Mutex::new(ClientCapabilities::new()),
        sessions: Sessions::default(),
    });
    connect(host)
        .await
        .map_err(|e| Failure::Runtime(format!("the ACP connection failed: {}", e.message)))?;
    Ok(ExitCode::SUCCESS)
}

/// An ACP error carrying `e`'s message.
fn failed(e: impl std::fmt::Display) -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(ErrorCode::INTERNAL_ERROR, e.to_string())
}

fn session_failed(e: SessionError) -> agent_client_protocol::Error {
    match e {
        SessionError::Unknown(_) => {
            agent_client_protocol::Error::new(ErrorCode::RESOURCE_NOT_FOUND, e.to_string())
        }
        SessionError::Folder { .. } => {
            agent_client_protocol::Error::new(ErrorCode::INVALID_PARAMS, e.to_string())
        }
        _ => failed(e),
    }
}

/// The ACP agent on stdio: one handler per method.
async fn connect(host: Arc<Host>) -> Result<(), agent_client_protocol::Error> {
    let (init, new, load, list, prompt, cancel) = (
        host.clone(),
        host.clone(),
        host.clone(),
        host.clone(),
        host.clone(),
        host,
    );
    Agent
        .v1()
        .name("agentloop")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                if let Ok(mut client) = init.client.lock() {
                    *client = request.client_capabilities;
                }
                responder.respond(initialized())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let opened = new.new_session(&request.cwd, cx).await;
                responder.respond_with_result(
                    opened
                        .map(|session| NewSessionResponse::new(session.chat_id.clone()))
                        .map_err(session_failed),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let loaded = load
                    .load_session(&request.session_id.0, &request.cwd, cx)
                    .await
                    .map(|()| LoadSessionResponse::new())
                    .map_err(session_failed);
                responder.respond_with_result(loaded)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                let fallback = std::env::current_dir().unwrap_or_default();
                let listed = sessions::list(&list.store, request.cwd.as_deref(), &fallback).await;
                responder.respond_with_result(
                    listed
                        .map(ListSessionsResponse::new)
                        .map_err(session_failed),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                let session = match prompt.sessions.get(&request.session_id.0) {
                    Ok(session) => session,
                    Err(e) => return responder.respond_with_error(session_failed(e)),
                };
                // The turn runs beside the dispatch loop, which must stay
                // free to pass on the editor's answers and cancels.
                let host = prompt.clone();
                cx.spawn({
                    let cx = cx.clone();
                    async move {
                        let ended = turn::prompt(host, session, cx, request).await;
                        responder
                            .respond_with_result(ended.map(PromptResponse::new).map_err(failed))
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |request: CancelNotification, _cx| {
                if let Ok(session) = cancel.sessions.get(&request.session_id.0) {
                    session.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}

/// What this agent says of itself at `initialize`.
fn initialized() -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
                .session_capabilities(
                    SessionCapabilities::new().list(SessionListCapabilities::new()),
                ),
        )
        .agent_info(Implementation::new("agentloop", env!("CARGO_PKG_VERSION")))
}

impl Host {
    /// A new session opened in `cwd`: a new chat.
    async fn new_session(
        &self,
        cwd: &Path,
        cx: ConnectionTo<Client>,
    ) -> Result<Arc<Session>, SessionError> {
        let chat = sessions::create(&self.store, &self.settings, cwd).await?;
        self.open(chat.id, cwd, cx)
    }

    /// Session `id` from the store, its history replayed to the editor.
    async fn load_session(
        &self,
        id: &str,
        cwd: &Path,
        cx: ConnectionTo<Client>,
    ) -> Result<(), SessionError> {
        let chat = sessions::reopen(&self.store, id, &self.approvals, cwd).await?;
        // A turn cut short by a killed agent is recovered by the next prompt.
        leases::release_orphaned(&self.store, &chat.id)
            .await
            .map_err(SessionError::Store)?;
        let session = self.open(chat.id, cwd, cx.clone())?;
        let messages = self
            .store
            .list_messages(&session.chat_id)
            .await
            .map_err(|e| SessionError::Store(e.to_string()))?;
        let messages: Vec<_> = messages.into_iter().map(|stored| stored.message).collect();
        for update in updates::history(&messages) {
            cx.send_notification(SessionNotification::new(session.chat_id.clone(), update))
                .map_err(|e| SessionError::Editor(e.message))?;
        }
        Ok(())
    }

    /// Opens chat `chat_id` as a session in `cwd`, with its tools.
    fn open(
        &self,
        chat_id: String,
        cwd: &Path,
        cx: ConnectionTo<Client>,
    ) -> Result<Arc<Session>, SessionError> {
        let root = self.root.as_deref().unwrap_or(cwd);
        let jail = sessions::jail(root)?;
        let mut tools = tools::build(
            &self.tool_names,
            Some(root),
            Some(&self.minion),
            &self.memory,
        )
        .map_err(|e| SessionError::Folder {
            path: root.display().to_string(),
            reason: e.to_string(),
        })?;
        let (offered, terminal) = self
            .client
            .lock()
            .map(|client| {
                let fs = Offered {
                    read: client.fs.read_text_file,
                    write: client.fs.write_text_file,
                };
                (fs, client.terminal)
            })
            .unwrap_or_default();
        #[cfg(target_os = "linux")]
        if terminal && let Some(shell) = tools.iter_mut().find(|tool| tool.name() == "shell") {
            *shell = Arc::new(terminal::EditorShell {
                jail: jail.clone(),
                cx: cx.clone(),
                session: chat_id.clone().into(),
            }) as Arc<dyn Tool>;
        }
        #[cfg(not(target_os = "linux"))]
        let _ = terminal;
        if (offered.read || offered.write)
            && let Some(fs) = tools.iter_mut().find(|tool| tool.name() == "fs")
        {
            let through_editor = ClientFs {
                jail: jail.clone(),
                offered,
                cx,
                session: chat_id.clone().into(),
            };
            *fs = Arc::new(FsTool::new(Arc::new(through_editor))) as Arc<dyn Tool>;
        }
        let session = Arc::new(Session::new(chat_id, jail, tools));
        self.sessions.insert(session.clone());
        Ok(session)
    }
}
