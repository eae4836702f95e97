//! The client of one ask call, as the host sees it: where progress goes,
//! who decides pending calls, and the token its cancellation trips.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use agentloop_types::{CancellationToken, Decision, Decisions, LoopEvent, PendingCall};
use rmcp::model::{
    ElicitRequest, ProgressNotificationParam, ProgressToken, RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, PeerRequestOptions};
use rmcp::{Peer, RoleServer};

use super::elicit::{decision_from_reply, elicitation_for, refusal};
use super::progress::progress_message;

/// The client of one call of the ask tool.
pub struct Caller {
    peer: Option<Peer<RoleServer>>,
    request_id: Option<RequestId>,
    progress_token: Option<ProgressToken>,
    progress: AtomicU64,
    cancel: CancellationToken,
    /// Why calls were refused for want of a person, told to the client
    /// with the answer.
    refusals: Mutex<Vec<String>>,
}

impl Caller {
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        request_id: RequestId,
        progress_token: Option<ProgressToken>,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            peer: Some(peer),
            request_id: Some(request_id),
            progress_token,
            progress: AtomicU64::new(0),
            cancel,
            refusals: Mutex::new(Vec::new()),
        }
    }

    /// A caller with no client behind it: no progress is sent and every
    /// pending call is refused. For hosts' own tests.
    pub fn detached(cancel: CancellationToken) -> Self {
        Self {
            peer: None,
            request_id: None,
            progress_token: None,
            progress: AtomicU64::new(0),
            cancel,
            refusals: Mutex::new(Vec::new()),
        }
    }

    /// The token the client's `notifications/cancelled` trips: give it to
    /// the run.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Tells the client about `event` as a progress notification, when the
    /// client asked for progress and the event is worth one. A client that
    /// is gone is not an error: the run goes on (or is cancelled).
    pub async fn event(&self, event: &LoopEvent) {
        let (Some(peer), Some(token)) = (&self.peer, &self.progress_token) else {
            return;
        };
        let Some(message) = progress_message(event) else {
            return;
        };
        let progress = self.progress.fetch_add(1, Ordering::Relaxed) + 1;
        let mut param = ProgressNotificationParam::new(token.clone(), progress as f64);
        param.message = Some(message);
        let _ = peer.notify_progress(param).await;
    }

    /// Whether the client can put a form before a person.
    pub fn can_ask(&self) -> bool {
        self.peer.as_ref().is_some_and(|peer| {
            peer.supported_elicitation_modes()
                .contains(&rmcp::service::ElicitationMode::Form)
        })
    }

    /// One decision per pending call: asked through MCP elicitation when
    /// the client supports it, else rejected with a reason saying why (the
    /// model reads it). A form the client fails to answer, or a run
    /// cancelled while waiting, rejects the call.
    pub async fn decide(&self, pending: &[PendingCall]) -> Decisions {
        let mut decisions = Decisions::new();
        for item in pending {
            let decision = match (&self.peer, self.can_ask()) {
                (Some(peer), true) => tokio::select! {
                    decision = self.ask(peer, item) => decision,
                    () = self.cancel.cancelled() => Decision::Reject {
                        reason: "the run was cancelled while waiting for a person".to_owned(),
                    },
                },
                _ => {
                    let decision = refusal(item);
                    if let (Decision::Reject { reason }, Ok(mut refusals)) =
                        (&decision, self.refusals.lock())
                    {
                        refusals.push(format!("{} was not run: {reason}", item.call.name));
                    }
                    decision
                }
            };
            decisions.insert(item.call.id.clone(), decision);
        }
        decisions
    }

    /// What was refused for want of a person, in order.
    pub(crate) fn refusals(&self) -> Vec<String> {
        self.refusals.lock().map(|r| r.clone()).unwrap_or_default()
    }

    async fn ask(&self, peer: &Peer<RoleServer>, pending: &PendingCall) -> Decision {
        let mut request = ElicitRequest::new(elicitation_for(pending));
        // Rides the ask call's own response stream on streamable HTTP.
        if let Some(id) = &self.request_id {
            request.extensions.insert(OriginatingRequestId(id.clone()));
        }
        let reply = match peer
            .send_request_with_option(
                ServerRequest::ElicitRequest(request),
                PeerRequestOptions::no_options(),
            )
            .await
        {
            Ok(handle) => handle.await_response().await,
            Err(error) => Err(error),
        };
        match reply {
            Ok(rmcp::model::ClientResult::ElicitResult(reply)) => {
                decision_from_reply(pending, &reply)
            }
            Ok(_) => Decision::Reject {
                reason: "the MCP client answered the form with something else".to_owned(),
            },
            Err(error) => Decision::Reject {
                reason: format!("the MCP client could not ask a person: {error}"),
            },
        }
    }
}
