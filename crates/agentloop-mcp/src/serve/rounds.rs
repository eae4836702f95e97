//! Multi round-trip ask calls (MCP 2026-07-28 on): a run that needs a
//! person ends the call with an `input_required` result carrying the
//! forms and a random `requestState` handle; the run waits, parked under
//! that handle, until the client calls again with the handle and the
//! answers, or until it is left too long and cancelled.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentloop_types::CancellationToken;
use rmcp::RoleServer;
use rmcp::model::{InputRequest, InputRequiredResult, InputResponses};
use rmcp::service::RequestContext;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::caller::{Caller, InputNeeded};
use super::host::{AskError, AskOutcome};

/// How long a run waits for the client to come back with answers before
/// it is cancelled: long enough for a person to read and fill a form.
const PARKED_FOR: Duration = Duration::from_secs(30 * 60);

/// One ask call's run, between and during rounds.
pub(crate) struct Call {
    run: JoinHandle<Result<AskOutcome, AskError>>,
    caller: Arc<Caller>,
    cancel: CancellationToken,
    inputs: mpsc::Receiver<InputNeeded>,
    /// Where the answers of the last round go, once the client sends them.
    answers: Option<oneshot::Sender<InputResponses>>,
}

/// How one round of a call ended.
pub(crate) enum Round {
    /// The run ended.
    Done(Result<AskOutcome, AskError>, Arc<Caller>),
    /// The run waits for a person: hand these forms to the client.
    InputRequired(InputRequiredResult),
}

/// The calls that wait for the client's next round, by handle.
#[derive(Clone, Default)]
pub(crate) struct Parked {
    calls: Arc<Mutex<HashMap<String, Call>>>,
}

impl Call {
    /// Starts `run` for `caller`; `inputs` is the receiving end of the
    /// channel the caller asks in rounds through.
    pub(crate) fn start(
        run: impl Future<Output = Result<AskOutcome, AskError>> + Send + 'static,
        caller: Arc<Caller>,
        inputs: mpsc::Receiver<InputNeeded>,
    ) -> Self {
        Self {
            run: tokio::spawn(run),
            cancel: caller.cancel_token(),
            caller,
            inputs,
            answers: None,
        }
    }

    /// Follows the run through the request `context` until it ends or
    /// needs a person; a cancelled request cancels the run and waits for
    /// its cancelled end.
    async fn round(mut self, context: &RequestContext<RoleServer>, parked: &Parked) -> Round {
        // A request dropped before the round ends (its client went away)
        // takes the run with it, as a cancelled request does.
        let mut followed = CancelOnDrop(Some(self.cancel.clone()));
        let round = tokio::select! {
            ended = &mut self.run => Round::Done(joined(ended), self.caller),
            // A caller that asks no one in rounds drops its sender: the
            // branch is then disabled and the others decide.
            Some(needed) = self.inputs.recv() => {
                let requests = needed
                    .forms
                    .into_iter()
                    .map(|(key, form)| (key, InputRequest::Elicitation(form)))
                    .collect();
                self.answers = Some(needed.answers);
                let handle = parked.park(self);
                Round::InputRequired(InputRequiredResult::new(Some(requests), Some(handle)))
            }
            () = context.ct.cancelled() => {
                // The run winds down to its cancelled end: no further model
                // request or tool start.
                self.cancel.cancel();
                Round::Done(joined((&mut self.run).await), self.caller)
            }
        };
        followed.0 = None;
        round
    }
}

/// Cancels the token it holds when dropped.
struct CancelOnDrop(Option<CancellationToken>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = self.0.take() {
            token.cancel();
        }
    }
}

fn joined(
    ended: Result<Result<AskOutcome, AskError>, tokio::task::JoinError>,
) -> Result<AskOutcome, AskError> {
    ended.unwrap_or_else(|e| Err(AskError::new(format!("the run stopped: {e}"))))
}

impl Parked {
    /// Follows a new call through its first round.
    pub(crate) async fn first(&self, call: Call, context: &RequestContext<RoleServer>) -> Round {
        call.round(context, self).await
    }

    /// Follows the call parked under `handle` through the next round,
    /// with the client's `answers` to the last one; `None` when no call
    /// is parked under it (never was, already resumed, or left too long).
    pub(crate) async fn resume(
        &self,
        handle: &str,
        answers: InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> Option<Round> {
        let mut call = self.calls.lock().ok()?.remove(handle)?;
        call.caller.continue_with(context);
        if let Some(waiting) = call.answers.take() {
            let _ = waiting.send(answers);
        }
        Some(call.round(context, self).await)
    }

    fn park(&self, call: Call) -> String {
        let handle = uuid::Uuid::new_v4().to_string();
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(handle.clone(), call);
        }
        let calls = Arc::downgrade(&self.calls);
        let key = handle.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PARKED_FOR).await;
            let left = calls
                .upgrade()
                .and_then(|calls| calls.lock().ok().and_then(|mut calls| calls.remove(&key)));
            // Dropping the answers' sender rejects the waiting calls.
            if let Some(call) = left {
                call.cancel.cancel();
            }
        });
        handle
    }
}
