//! One way in: [`ChatRuntime::submit`] takes a typed [`RunInput`] for a
//! chat and decides what it means for the chat's run, so a host maps its
//! own wire shape to a `RunInput` and never to runtime calls.

use agentloop_types::{RunInput, SteerStrategy};

use crate::chat_run::ChatRun;
use crate::error::{RuntimeError, RuntimeResult};
use crate::runtime::ChatRuntime;

/// What a submitted input set going.
#[derive(Debug)]
pub enum Submitted {
    /// A run goes on: reading it drives it and stores what it yields.
    Run(ChatRun),
    /// Nothing runs: the chat already ends with an answer, or there was
    /// no run left to stop.
    Idle,
    /// The message was stored for the run going on, which takes it at its
    /// next step boundary ([`ChatRuntime::enqueue`]).
    Queued,
}

impl Submitted {
    /// The run set going, if one was.
    pub fn into_run(self) -> Option<ChatRun> {
        match self {
            Submitted::Run(run) => Some(run),
            Submitted::Idle | Submitted::Queued => None,
        }
    }
}

impl ChatRuntime {
    /// Submits `input` to the chat's run.
    ///
    /// What each input does to a chat:
    /// - `Start` naming an agent or offering client tools: refused
    ///   (`UnsupportedInput`); a chat runs the one agent it was made with.
    /// - `Start` with a message, and `Message`: the message is stored and a
    ///   run starts over the history ([`ChatRuntime::send`]); a chat whose run
    ///   waits for a person refuses it, and so does one whose run still
    ///   goes on, except for a `Message` it enqueues (its strategy
    ///   `enqueue`, the default: [`ChatRuntime::enqueue`]). A chat's run
    ///   is steered only by enqueueing: `interrupt` and `rollback` are
    ///   refused (`UnsupportedInput`), `reject` refuses as a `Start` is.
    /// - `Start` without one: the chat continues as it stands
    ///   ([`ChatRuntime::continue_chat`]); nothing runs when its history
    ///   already ends with an answer.
    /// - `Decide`: the waiting run resumes with the decisions
    ///   ([`ChatRuntime::resume`]).
    /// - `Cancel`: the waiting run's calls are answered as cancelled and it
    ///   ends `cancelled` ([`ChatRuntime::cancel_suspended`]). A run executing
    ///   in this process is cancelled through the token its host gave the
    ///   runtime ([`ChatRuntime::with_cancel`]), which reaches it mid-turn.
    /// - `Stop`: as `Cancel` for a waiting run; with no run open, nothing is
    ///   left to stop and nothing runs.
    pub async fn submit(&self, chat_id: &str, input: RunInput) -> RuntimeResult<Submitted> {
        // Boxed: a run's futures are large and live as long as it does.
        match input {
            RunInput::Start { agent: Some(_), .. } => Err(RuntimeError::UnsupportedInput {
                what: "an agent to start",
            }),
            RunInput::Start { client_tools, .. } if !client_tools.is_empty() => {
                Err(RuntimeError::UnsupportedInput {
                    what: "tools its client runs",
                })
            }
            RunInput::Message {
                strategy: Some(SteerStrategy::Interrupt | SteerStrategy::Rollback),
                ..
            } => Err(RuntimeError::UnsupportedInput {
                what: "a chat's run interrupted or rolled back by a message",
            }),
            RunInput::Message {
                message,
                strategy: None | Some(SteerStrategy::Enqueue),
            } => match Box::pin(self.send(chat_id, message.clone())).await {
                Err(RuntimeError::RunInProgress { .. }) => {
                    self.enqueue(chat_id, message).await?;
                    Ok(Submitted::Queued)
                }
                other => other.map(Submitted::Run),
            },
            RunInput::Start {
                message: Some(message),
                ..
            }
            | RunInput::Message { message, .. } => Box::pin(self.send(chat_id, message))
                .await
                .map(Submitted::Run),
            RunInput::Start { message: None, .. } => Box::pin(self.continue_chat(chat_id))
                .await
                .map(|run| run.map_or(Submitted::Idle, Submitted::Run)),
            RunInput::Decide { decisions } => Box::pin(self.resume(chat_id, decisions))
                .await
                .map(Submitted::Run),
            RunInput::Cancel {} => Box::pin(self.cancel_suspended(chat_id))
                .await
                .map(Submitted::Run),
            RunInput::Stop {} => match Box::pin(self.cancel_suspended(chat_id)).await {
                Ok(run) => Ok(Submitted::Run(run)),
                Err(RuntimeError::NotSuspended { .. }) => {
                    // A run still executing elsewhere is not ended here:
                    // say so rather than report it stopped.
                    Box::pin(self.ensure_idle(chat_id)).await?;
                    Ok(Submitted::Idle)
                }
                Err(error) => Err(error),
            },
        }
    }
}
