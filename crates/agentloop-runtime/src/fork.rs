//! Forking a run at one of its kept steps (see
//! [`agentloop_storage::steps`]): a new run, with its own id and its own
//! log, whose history is the original's up to that step. The original is
//! only read.
//!
//! A fork is written in three parts ([`ForkPlan`]): the step's messages
//! in the fork's chat, its record (`pending`, holding the step's state,
//! marked as a fork of `run@seq`) and its log, a copy of the original's
//! events up to the step's seq, so the fork's own events continue it.
//! Nothing runs until the fork is started ([`ChatRuntime::run_fork`],
//! or [`ChatRuntime::continue_chat`] on its chat, or a host hosting its
//! record): it then goes on from the step's state as an interrupted run
//! does.

use agentloop_storage::model::{Chat, RunRecord, RunStatus, now_millis};
use agentloop_storage::{RunStep, RuntimeStore, StorageError};
use agentloop_types::{LoopEvent, Message, RunPhase, RunState};

use crate::chat_run::ChatRun;
use crate::error::{RuntimeError, RuntimeResult};
use crate::forked::FORKED;
pub use crate::forked::{Forked, is_unstarted_fork};
use crate::ids::new_id;
use crate::runtime::ChatRuntime;

/// Events read from the original's log a page.
const PAGE: u32 = 500;

/// Everything a fork of run `from` at step `at` is made of.
#[derive(Debug, Clone)]
pub struct ForkPlan {
    /// The original run.
    pub from: String,
    /// The step's seq.
    pub at: u64,
    /// The state the fork starts from: the step's, with the prompt added
    /// when one was given.
    pub state: RunState,
    /// The original's log up to the step's seq.
    pub events: Vec<LoopEvent>,
}

impl ForkPlan {
    /// Reads what a fork of run `from` at step `at` starts with;
    /// `prompt`, when given, is added as a person's message (at a step
    /// where the run calls the model next).
    pub async fn read(
        store: &dyn RuntimeStore,
        from: &str,
        at: u64,
        prompt: Option<&str>,
    ) -> RuntimeResult<Self> {
        let record = store.get_run(from).await?;
        let step = match store.get_step(from, at).await {
            Ok(step) => step,
            Err(StorageError::NotFound { .. }) => {
                return Err(not_a_step(from, at, &store.list_steps(from).await?));
            }
            Err(e) => return Err(e.into()),
        };
        let mut state = state_at(store, &record, &step).await?;
        if let Some(prompt) = prompt {
            if state.phase != RunPhase::CallModel {
                return Err(RuntimeError::ForkPrompt {
                    run_id: from.to_owned(),
                    at,
                });
            }
            state
                .messages
                .push(Message::user_text(new_id("msg"), prompt));
        }
        let mut events = Vec::new();
        let mut after = None;
        'pages: loop {
            let page = store.list_events(from, after, PAGE).await?;
            let Some(last) = page.last() else { break };
            after = Some(last.seq);
            for event in page {
                if event.seq > at {
                    break 'pages;
                }
                events.push(event);
            }
        }
        Ok(Self {
            from: from.to_owned(),
            at,
            state,
            events,
        })
    }

    /// Saves the fork's messages in its chat `chat_id` (which holds the
    /// first `saved` of them already).
    pub async fn save_messages(
        &self,
        store: &dyn RuntimeStore,
        chat_id: &str,
        saved: usize,
    ) -> RuntimeResult<()> {
        for message in self.state.messages.iter().skip(saved) {
            store.save_message(chat_id, message).await?;
        }
        Ok(())
    }

    /// The fork's record: run `run_id` in chat `chat_id`, not started, no
    /// lease, holding the state it starts from.
    pub fn record(&self, run_id: &str, chat_id: &str, now: i64) -> RuntimeResult<RunRecord> {
        let mut state = self.state.clone();
        state.run_id = run_id.to_owned();
        let forked = Forked {
            run_id: run_id.to_owned(),
            chat_id: chat_id.to_owned(),
            from: self.from.clone(),
            at: self.at,
        };
        let mut result = serde_json::to_value(&forked)
            .map_err(|e| StorageError::Serialization(e.to_string()))?;
        result["status"] = FORKED.into();
        Ok(RunRecord {
            id: run_id.to_owned(),
            chat_id: Some(chat_id.to_owned()),
            status: RunStatus::Pending,
            state: Some(state),
            result: Some(result),
            pending_tool_call: None,
            end_reason: None,
            lease_owner: None,
            lease_expires_at: None,
            created_at: now,
            updated_at: now,
        })
    }

    /// Copies the original's log up to the step into the fork's (`run_id`,
    /// whose record exists).
    pub async fn copy_log(&self, store: &dyn RuntimeStore, run_id: &str) -> RuntimeResult<()> {
        for page in self.events.chunks(PAGE as usize) {
            store.append_events(run_id, page).await?;
        }
        Ok(())
    }
}

/// Forks run `from` (a run of a chat) at its step `at` into a new chat in
/// the same project, with the same settings, holding the step's messages
/// (and `prompt`, when given, as a person's message after them). Nothing
/// runs: the fork's record waits to be started.
pub async fn fork_chat_run(
    store: &dyn RuntimeStore,
    from: &str,
    at: u64,
    prompt: Option<&str>,
) -> RuntimeResult<Forked> {
    let plan = ForkPlan::read(store, from, at, prompt).await?;
    let record = store.get_run(from).await?;
    let original = match &record.chat_id {
        Some(chat_id) => store.get_chat(chat_id).await?,
        None => {
            return Err(RuntimeError::CorruptRun {
                run_id: from.to_owned(),
                message: "a run of no chat cannot be forked here".to_owned(),
            });
        }
    };
    let now = now_millis();
    let chat = Chat {
        id: new_id("chat"),
        title: format!("{} (fork of {from} at {at})", original.title),
        totals: plan.state.totals,
        minion: None,
        created_at: now,
        updated_at: now,
        ..original
    };
    store.create_chat(&chat).await?;
    plan.save_messages(store, &chat.id, 0).await?;
    let run_id = new_id("run");
    store
        .create_run(&plan.record(&run_id, &chat.id, now)?)
        .await?;
    plan.copy_log(store, &run_id).await?;
    Ok(Forked {
        run_id,
        chat_id: chat.id,
        from: from.to_owned(),
        at,
    })
}

/// The state at `step` of run `record`: the step's state over the run's
/// history (its latest state's, else its chat's).
async fn state_at(
    store: &dyn RuntimeStore,
    record: &RunRecord,
    step: &RunStep,
) -> RuntimeResult<RunState> {
    if let Some(state) = record
        .state
        .as_ref()
        .and_then(|latest| step.state_over(&latest.messages))
    {
        return Ok(state);
    }
    if let Some(chat_id) = &record.chat_id {
        let messages: Vec<Message> = store
            .list_messages(chat_id)
            .await?
            .into_iter()
            .map(|m| m.message)
            .collect();
        if let Some(state) = step.state_over(&messages) {
            return Ok(state);
        }
    }
    Err(RuntimeError::CorruptRun {
        run_id: record.id.clone(),
        message: format!(
            "its history no longer starts with the {} messages of step {}",
            step.message_count, step.seq
        ),
    })
}

/// `NotAStep` for `at` among run `run_id`'s `steps`.
fn not_a_step(run_id: &str, at: u64, steps: &[RunStep]) -> RuntimeError {
    RuntimeError::NotAStep {
        run_id: run_id.to_owned(),
        at,
        kept: steps.len(),
        first: steps.first().map(|s| s.seq),
        last: steps.last().map(|s| s.seq),
    }
}

impl ChatRuntime {
    /// A run's kept steps, oldest first.
    pub async fn steps(&self, run_id: &str) -> RuntimeResult<Vec<RunStep>> {
        self.store.get_run(run_id).await?;
        Ok(self.store.list_steps(run_id).await?)
    }

    /// Forks run `from` at its step `at` into a new chat (see
    /// [`fork_chat_run`]). Nothing runs yet: start it with
    /// [`run_fork`](Self::run_fork) or [`continue_chat`](Self::continue_chat)
    /// on its chat.
    pub async fn fork(&self, from: &str, at: u64, prompt: Option<&str>) -> RuntimeResult<Forked> {
        fork_chat_run(&*self.store, from, at, prompt).await
    }

    /// Starts fork `run_id` (made by [`fork`](Self::fork)) from the state
    /// it holds, its events continuing its log.
    pub async fn run_fork(&self, run_id: &str) -> RuntimeResult<ChatRun> {
        let record = self.store.get_run(run_id).await?;
        let state = match record.state.clone() {
            Some(state) if is_unstarted_fork(&record) => state,
            _ => {
                return Err(RuntimeError::NotAFork {
                    run_id: run_id.to_owned(),
                });
            }
        };
        let mut record = record;
        record.result = None;
        let resume = |options, state, deps| Ok(agentloop_engine::resume(options, state, deps));
        Box::pin(self.continue_record(record, state, None, resume)).await
    }
}
