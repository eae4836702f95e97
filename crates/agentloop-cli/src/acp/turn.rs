//! One ACP prompt turn: the person's message sent to the session's chat,
//! the run streamed to the editor as session updates, each approval the
//! run waits for asked as a permission request, and the turn ended with a
//! stop reason. A cancel (`session/cancel`) stops the run where it is;
//! every tool call the editor was told of is then answered.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, EmbeddedResourceResource, PermissionOption, PermissionOptionKind,
    PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, SessionId,
    SessionNotification, SessionUpdate, StopReason, ToolCallUpdate, ToolCallUpdateFields,
};
use agentloop_runtime::{ChatRuntime, DEFAULT_LEASE_MS};
use agentloop_types::{
    CancellationToken, Decision, Decisions, LoopStatus, Message, PendingCall, RunInput, Wait,
};
use futures::StreamExt;

use super::host::Host;
use super::sessions::Session;
use super::updates::Updates;

/// Why a turn could not run or ended in failure, as the editor is told.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error("the prompt holds no text")]
    Empty,
    #[error(transparent)]
    Session(#[from] super::sessions::SessionError),
    #[error("the run failed: {0}")]
    Run(String),
    #[error("the editor went away: {0}")]
    Connection(String),
}

impl From<agent_client_protocol::Error> for TurnError {
    fn from(e: agent_client_protocol::Error) -> Self {
        Self::Connection(e.message)
    }
}

/// The permission options offered for each approval, by id.
const ALLOW: &str = "allow";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT: &str = "reject";

/// Runs one prompt turn in `session` and says why it stopped.
pub async fn prompt(
    host: Arc<Host>,
    session: Arc<Session>,
    cx: ConnectionTo<Client>,
    request: PromptRequest,
) -> Result<StopReason, TurnError> {
    let text = prompt_text(&request.prompt);
    if text.trim().is_empty() {
        return Err(TurnError::Empty);
    }
    let cancel = CancellationToken::new();
    let _running = session.begin(cancel.clone())?;
    crate::session::name_after(&host.store, &session.chat_id, &text)
        .await
        .map_err(|e| TurnError::Run(e.to_string()))?;
    let message = Message::user_text(agentloop_runtime::ids::new_id("user"), text);
    let mut turn = Turn {
        host: &host,
        session: &session,
        cx: &cx,
        id: request.session_id.clone(),
        updates: Updates::new(Some(&session.jail)),
    };
    let mut input = RunInput::start(message);
    let stop = loop {
        // A cancelled turn's waiting calls are closed with a token of their
        // own: the turn's is already cancelled.
        let token = match input {
            RunInput::Cancel {} => CancellationToken::new(),
            _ => cancel.clone(),
        };
        let status = match turn.run(input, token).await {
            Ok(status) => status,
            Err(e) => {
                turn.close_unanswered()?;
                return Err(e);
            }
        };
        let pending = match status {
            None | Some(LoopStatus::Complete { .. }) => break StopReason::EndTurn,
            Some(LoopStatus::Cancelled) => break StopReason::Cancelled,
            Some(LoopStatus::MaxIterations) => break StopReason::MaxTurnRequests,
            Some(LoopStatus::LimitExceeded { .. }) => break StopReason::MaxTokens,
            Some(LoopStatus::Error { error }) => {
                turn.close_unanswered()?;
                return Err(TurnError::Run(error.to_string()));
            }
            Some(LoopStatus::Suspended { pending, .. }) => pending,
        };
        if cancel.is_cancelled() {
            input = RunInput::Cancel {};
            continue;
        }
        input = match turn.ask(&pending, &cancel).await? {
            Some(decisions) => RunInput::Decide { decisions },
            None => {
                cancel.cancel();
                RunInput::Cancel {}
            }
        };
    };
    turn.close_unanswered()?;
    // A run cancelled as it ended still stopped because of the cancel.
    Ok(if cancel.is_cancelled() {
        StopReason::Cancelled
    } else {
        stop
    })
}

/// The text of a prompt: its text blocks, and the text of resources the
/// editor embedded, each under its URI.
fn prompt_text(blocks: &[AcpBlock]) -> String {
    let parts: Vec<String> = blocks
        .iter()
        .filter_map(|block| match block {
            AcpBlock::Text(text) => Some(text.text.clone()),
            AcpBlock::ResourceLink(link) => Some(format!("[{}]({})", link.name, link.uri)),
            AcpBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(resource) => {
                    Some(format!("{}:\n{}", resource.uri, resource.text))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    parts.join("\n\n")
}

struct Turn<'a> {
    host: &'a Host,
    session: &'a Session,
    cx: &'a ConnectionTo<Client>,
    id: SessionId,
    updates: Updates<'a>,
}

impl Turn<'_> {
    fn send(&self, update: SessionUpdate) -> Result<(), TurnError> {
        self.cx
            .send_notification(SessionNotification::new(self.id.clone(), update))?;
        Ok(())
    }

    /// Submits `input` to the chat and streams the run; its final status,
    /// or none when nothing ran.
    async fn run(
        &mut self,
        input: RunInput,
        cancel: CancellationToken,
    ) -> Result<Option<LoopStatus>, TurnError> {
        let runtime = ChatRuntime::new(self.host.store.clone(), self.host.provider.clone())
            .with_tools(self.session.tools.clone())
            .with_hooks(self.host.hooks.clone())
            .with_lease(self.host.lease_owner.clone(), DEFAULT_LEASE_MS)
            .with_cancel(cancel);
        let submitted = Box::pin(runtime.submit(&self.session.chat_id, input))
            .await
            .map_err(|e| TurnError::Run(e.to_string()))?;
        let Some(mut run) = submitted.into_run() else {
            return Ok(None);
        };
        let mut status = None;
        while let Some(event) = run.next().await {
            let event = event.map_err(|e| TurnError::Run(e.to_string()))?;
            for update in self.updates.event(&event) {
                self.send(update)?;
            }
            if let Some(result) = event.into_root_result() {
                status = Some(result.status);
            }
        }
        Ok(status)
    }

    /// Asks the editor about each approval the run waits for; none when
    /// the person cancelled the turn meanwhile. Questions are declined:
    /// ACP has no way to put one to the person.
    async fn ask(
        &self,
        pending: &[PendingCall],
        cancel: &CancellationToken,
    ) -> Result<Option<Decisions>, TurnError> {
        let mut decisions = BTreeMap::new();
        for item in pending {
            let decision = match &item.wait {
                Wait::Approval { reason } => {
                    let asked = self.cx.send_request(RequestPermissionRequest::new(
                        self.id.clone(),
                        ToolCallUpdate::new(
                            item.call.id.clone(),
                            ToolCallUpdateFields::new().title(format!(
                                "{}: {}",
                                item.call.name,
                                crate::render::shorten(reason, 200)
                            )),
                        ),
                        vec![
                            PermissionOption::new(ALLOW, "Allow", PermissionOptionKind::AllowOnce),
                            PermissionOption::new(
                                ALLOW_ALWAYS,
                                format!("Always allow {}", item.call.name),
                                PermissionOptionKind::AllowAlways,
                            ),
                            PermissionOption::new(
                                REJECT,
                                "Reject",
                                PermissionOptionKind::RejectOnce,
                            ),
                        ],
                    ));
                    let answer = tokio::select! {
                        answer = asked.block_task() => answer?,
                        () = cancel.cancelled() => return Ok(None),
                    };
                    match answer.outcome {
                        RequestPermissionOutcome::Selected(selected) => {
                            match &*selected.option_id.0 {
                                ALLOW => Decision::Approve { arguments: None },
                                ALLOW_ALWAYS => Decision::ApproveAlways,
                                _ => Decision::Reject {
                                    reason: "the person refused to allow this call".to_owned(),
                                },
                            }
                        }
                        _ => return Ok(None),
                    }
                }
                Wait::Question { .. } => Decision::Reject {
                    reason: "no one can answer a question over ACP".to_owned(),
                },
            };
            decisions.insert(item.call.id.clone(), decision);
        }
        Ok(Some(decisions))
    }

    fn close_unanswered(&mut self) -> Result<(), TurnError> {
        for update in self.updates.close_unanswered() {
            self.send(update)?;
        }
        Ok(())
    }
}
