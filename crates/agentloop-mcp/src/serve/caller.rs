//! The client of one ask call, as the host sees it: where progress goes,
//! who decides pending calls, and the token its cancellation trips.
//!
//! How a person is asked depends on the revision the client speaks: up
//! to 2025-11-25 the server sends the client an `elicitation/create`
//! request while the call runs; from 2026-07-28 on the call ends with an
//! `input_required` result carrying the forms, and the client calls again
//! with the answers (see [`super::rounds`]). Either way the client must
//! have declared form elicitation: in the handshake, or in the call's own
//! `_meta` on the newer revisions.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use agentloop_types::{CancellationToken, Decision, Decisions, LoopEvent, PendingCall};
use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitResult, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, PeerRequestOptions, RequestContext};
use rmcp::{Peer, RoleServer};
use tokio::sync::{mpsc, oneshot};

use super::elicit::{decision_from_reply, elicitation_for, refusal};
use super::progress::progress_message;

/// Forms the run needs answered before it can go on, keyed by the pending
/// call's id, and where the client's answers go (an absent key: no
/// answer).
pub(crate) struct InputNeeded {
    pub(crate) forms: BTreeMap<String, ElicitRequest>,
    pub(crate) answers: oneshot::Sender<BTreeMap<String, serde_json::Value>>,
}

/// How a person behind the client is reached.
enum Asking {
    /// The client cannot put a form before a person.
    Nobody,
    /// `elicitation/create` requests while the call runs (handshake
    /// revisions).
    Requests,
    /// Forms handed back in an `input_required` result, answered by the
    /// client's next call (2026-07-28 on).
    Rounds(mpsc::Sender<InputNeeded>),
}

/// The request the caller currently answers: with multi round-trip calls,
/// each round is a new request with its own id and progress token.
#[derive(Clone)]
struct Leg {
    peer: Peer<RoleServer>,
    request_id: RequestId,
    progress_token: Option<ProgressToken>,
}

/// The client of one call of the ask tool.
pub struct Caller {
    leg: Mutex<Option<Leg>>,
    asking: Asking,
    progress: AtomicU64,
    cancel: CancellationToken,
    /// Why calls were refused for want of a person, told to the client
    /// with the answer.
    refusals: Mutex<Vec<String>>,
}

/// Whether `capabilities` declare form elicitation (a bare `elicitation`
/// object means forms, as it did before modes existed).
fn elicits_forms(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// Whether `version` is a revision without the initialize handshake, where
/// the server asks the client only through `input_required` results.
pub(crate) fn asks_in_rounds(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| !v.has_initialize())
}

impl Caller {
    /// The caller of the request `context`: its capabilities are those
    /// the request declares in its `_meta`, else the handshake's.
    /// `rounds` is where forms go when the client speaks a revision that
    /// asks in rounds.
    pub(crate) fn new(
        context: &RequestContext<RoleServer>,
        rounds: mpsc::Sender<InputNeeded>,
        cancel: CancellationToken,
    ) -> Self {
        let can_elicit = context
            .client_capabilities()
            .is_some_and(|c| elicits_forms(&c));
        let asking = match (
            can_elicit,
            asks_in_rounds(context.protocol_version().as_ref()),
        ) {
            (false, _) => Asking::Nobody,
            (true, false) => Asking::Requests,
            (true, true) => Asking::Rounds(rounds),
        };
        Self {
            leg: Mutex::new(Some(Leg::of(context))),
            asking,
            progress: AtomicU64::new(0),
            cancel,
            refusals: Mutex::new(Vec::new()),
        }
    }

    /// A caller with no client behind it: no progress is sent and every
    /// pending call is refused. For hosts' own tests.
    pub fn detached(cancel: CancellationToken) -> Self {
        Self {
            leg: Mutex::new(None),
            asking: Asking::Nobody,
            progress: AtomicU64::new(0),
            cancel,
            refusals: Mutex::new(Vec::new()),
        }
    }

    /// Points progress at `context`, the request that continues the call.
    pub(crate) fn continue_with(&self, context: &RequestContext<RoleServer>) {
        if let Ok(mut leg) = self.leg.lock() {
            *leg = Some(Leg::of(context));
        }
    }

    /// The token the client's `notifications/cancelled` trips: give it to
    /// the run.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    fn current_leg(&self) -> Option<Leg> {
        self.leg.lock().ok().and_then(|leg| leg.clone())
    }

    /// Tells the client about `event` as a progress notification, when the
    /// client asked for progress and the event is worth one. A client that
    /// is gone is not an error: the run goes on (or is cancelled).
    pub async fn event(&self, event: &LoopEvent) {
        if let Some(message) = progress_message(event) {
            self.note(message).await;
        }
    }

    /// Tells the client `message` as progress, when it asked for progress
    /// (a moment the host knows of that no event names alone, such as a
    /// queued prompt the run took).
    pub async fn note(&self, message: String) {
        let Some(Leg {
            peer,
            progress_token: Some(token),
            ..
        }) = self.current_leg()
        else {
            return;
        };
        let progress = self.progress.fetch_add(1, Ordering::Relaxed) + 1;
        let mut param = ProgressNotificationParam::new(token, progress as f64);
        param.message = Some(message);
        let _ = peer.notify_progress(param).await;
    }

    /// Whether the client can put a form before a person.
    pub fn can_ask(&self) -> bool {
        !matches!(self.asking, Asking::Nobody)
    }

    /// One decision per pending call: asked through MCP elicitation when
    /// the client supports it, else rejected with a reason saying why (the
    /// model reads it). A form the client fails to answer, or a run
    /// cancelled while waiting, rejects the call.
    pub async fn decide(&self, pending: &[PendingCall]) -> Decisions {
        let cancelled = || Decision::Reject {
            reason: "the run was cancelled while waiting for a person".to_owned(),
        };
        let mut decisions = Decisions::new();
        match &self.asking {
            Asking::Nobody => {
                for item in pending {
                    decisions.insert(item.call.id.clone(), self.refuse(item));
                }
            }
            Asking::Requests => {
                for item in pending {
                    let decision = tokio::select! {
                        decision = self.ask(item) => decision,
                        () = self.cancel.cancelled() => cancelled(),
                    };
                    decisions.insert(item.call.id.clone(), decision);
                }
            }
            Asking::Rounds(rounds) => {
                let answers = tokio::select! {
                    answers = ask_in_a_round(rounds, pending) => answers,
                    () = self.cancel.cancelled() => None,
                };
                for item in pending {
                    let decision = match &answers {
                        None => cancelled(),
                        Some(answers) => reply_decision(item, answers.get(item.call.id.as_str())),
                    };
                    decisions.insert(item.call.id.clone(), decision);
                }
            }
        }
        decisions
    }

    fn refuse(&self, item: &PendingCall) -> Decision {
        let decision = refusal(item);
        if let (Decision::Reject { reason }, Ok(mut refusals)) = (&decision, self.refusals.lock()) {
            refusals.push(format!("{} was not run: {reason}", item.call.name));
        }
        decision
    }

    /// What was refused for want of a person, in order.
    pub(crate) fn refusals(&self) -> Vec<String> {
        self.refusals.lock().map(|r| r.clone()).unwrap_or_default()
    }

    async fn ask(&self, pending: &PendingCall) -> Decision {
        let Some(leg) = self.current_leg() else {
            return refusal(pending);
        };
        let mut request = ElicitRequest::new(elicitation_for(pending));
        // Rides the ask call's own response stream on streamable HTTP.
        request
            .extensions
            .insert(OriginatingRequestId(leg.request_id.clone()));
        let reply = match leg
            .peer
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

impl Leg {
    fn of(context: &RequestContext<RoleServer>) -> Self {
        Self {
            peer: context.peer.clone(),
            request_id: context.id.clone(),
            progress_token: context.meta.get_progress_token(),
        }
    }
}

/// Hands every pending call's form to the call in progress and waits for
/// the client's answers; `None` when the call is gone.
async fn ask_in_a_round(
    rounds: &mpsc::Sender<InputNeeded>,
    pending: &[PendingCall],
) -> Option<BTreeMap<String, serde_json::Value>> {
    let forms = pending
        .iter()
        .map(|item| {
            (
                item.call.id.as_str().to_owned(),
                ElicitRequest::new(elicitation_for(item)),
            )
        })
        .collect();
    let (answers, answered) = oneshot::channel();
    rounds.send(InputNeeded { forms, answers }).await.ok()?;
    answered.await.ok()
}

/// The decision an answer to a form in a round makes; an answer that is
/// missing or no elicitation result rejects the call.
fn reply_decision(pending: &PendingCall, answer: Option<&serde_json::Value>) -> Decision {
    match answer.map(|a| serde_json::from_value::<ElicitResult>(a.clone())) {
        Some(Ok(reply)) => decision_from_reply(pending, &reply),
        Some(Err(_)) => Decision::Reject {
            reason: "the MCP client answered the form with something else".to_owned(),
        },
        None => Decision::Reject {
            reason: "the MCP client sent no answer to the form".to_owned(),
        },
    }
}
