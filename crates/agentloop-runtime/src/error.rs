//! The runtime's error type.

use agentloop_storage::StorageError;

/// Why a runtime operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuntimeError {
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A project's or chat's stored settings do not parse.
    #[error("invalid settings of {owner}: {message}")]
    InvalidSettings {
        /// `project <id>` or `chat <id>`.
        owner: String,
        /// What is wrong.
        message: String,
    },
    /// Another run of the chat holds a live lease.
    #[error("chat {chat_id} already has a running run {run_id}")]
    RunInProgress {
        /// The chat.
        chat_id: String,
        /// The running run.
        run_id: String,
    },
    /// The chat waits for a person; `resume` it with decisions first.
    #[error(
        "chat {chat_id} waits for a decision on run {run_id}: approve or reject its pending calls, or answer its question"
    )]
    Suspended {
        /// The chat.
        chat_id: String,
        /// The suspended run.
        run_id: String,
    },
    /// Decisions that do not fit what the suspended run waits for.
    #[error("the decisions do not fit: {0}")]
    Decisions(#[from] agentloop_types::DecisionError),
    /// `resume` was called on a chat with no suspended run.
    #[error("chat {chat_id} has no suspended run")]
    NotSuspended {
        /// The chat.
        chat_id: String,
    },
    /// `resend_from` was given a message that cannot start a run.
    #[error("cannot resend from message {message_id}: {reason}")]
    NotResendable {
        /// The message.
        message_id: String,
        /// Why.
        reason: String,
    },
    /// Another worker holds the run's lease now: this one stopped writing
    /// and left the run to it.
    #[error("the lease of run {run_id} was lost to another worker")]
    LeaseLost {
        /// The run.
        run_id: String,
    },
    /// The host of the run (a server recording agent runs) refused or
    /// failed to record its end.
    #[error("the host could not record the end of run {run_id}: {message}")]
    Host {
        /// The run.
        run_id: String,
        /// What failed.
        message: String,
    },
    /// An input asked a chat for what only another host offers (an agent
    /// of the host's choosing, tools its client runs itself).
    #[error("a chat cannot take {what}: start it without")]
    UnsupportedInput {
        /// What was asked.
        what: &'static str,
    },
    /// A fork was asked at a seq where the run keeps no step.
    #[error("{}", not_a_step(run_id, *at, *kept, *first, *last))]
    NotAStep {
        /// The run.
        run_id: String,
        /// The seq asked for.
        at: u64,
        /// How many steps the run keeps.
        kept: usize,
        /// The seq of its first kept step.
        first: Option<u64>,
        /// The seq of its last kept step.
        last: Option<u64>,
    },
    /// A fork was given a prompt at a step where the run runs tool calls
    /// next (a person's message may only follow their results).
    #[error(
        "step {at} of run {run_id} runs tool calls next: a prompt can only be added at a step where the run calls the model"
    )]
    ForkPrompt {
        /// The run.
        run_id: String,
        /// The step's seq.
        at: u64,
    },
    /// A run started as a fork is not one, or has started already.
    #[error("run {run_id} is not a fork waiting to start")]
    NotAFork {
        /// The run.
        run_id: String,
    },
    /// A stored run record could not be read back.
    #[error("run {run_id} is corrupt: {message}")]
    CorruptRun {
        /// The run.
        run_id: String,
        /// What is wrong.
        message: String,
    },
}

/// The message of [`RuntimeError::NotAStep`].
fn not_a_step(run_id: &str, at: u64, kept: usize, first: Option<u64>, last: Option<u64>) -> String {
    match (first, last) {
        (Some(first), Some(last)) => format!(
            "seq {at} is not a step of run {run_id}: its {kept} kept steps are at seqs from {first} to {last} (`agentloop runs show {run_id} --steps` lists them)"
        ),
        _ => format!("seq {at} is not a step of run {run_id}: it keeps no steps"),
    }
}

/// Result of a runtime operation.
pub type RuntimeResult<T> = Result<T, RuntimeError>;
