//! Runs whose record a host created: a server's agent run is one run of
//! its chat, with one record, one lease and one event log, and this is how
//! the runtime executes it — on a first start, after a person's decisions,
//! and when another worker takes it over after a crash.
//!
//! [`ChatRuntime::host`] reads where the record stands and continues it in
//! place, its events continuing the record's log:
//! - the state waits for a person: resumed with the recorded decisions
//!   once they decide every pending call, else nothing runs;
//! - the state is a built-in strategy's, between two steps: the run was
//!   interrupted; its started calls are answered as interrupted and the
//!   machine goes on from its stored state (see [`crate::recovery`]);
//! - otherwise the chat's dangling calls are closed and the loop runs over
//!   the chat's history, unless the chat already ends with an answer.
//!
//! A host that created the record a moment ago, under this runtime's
//! lease, hands over what it wrote ([`Written`]) and nothing is read back:
//! the loop starts over the chat's first messages at once.

use std::sync::Arc;

use agentloop_storage::StorageError;
use agentloop_storage::model::{Chat, Project, RunRecord, RunStatus, now_millis};
use agentloop_types::{
    Decisions, EventKind, FinishedEvent, LoopError, LoopEvent, LoopResult, LoopStatus, Message,
    PendingCall, Role, RunPath, RunPhase,
};

use crate::chat_run::ChatRun;
use crate::ending::RunEnding;
use crate::error::{RuntimeError, RuntimeResult};
use crate::gate::Gate;
use crate::heartbeat::Heartbeat;
use crate::log::RunLog;
use crate::recovery::is_resumable;
use crate::runtime::ChatRuntime;

/// A run a host created the record of.
pub struct HostedRun {
    /// The run record's id.
    pub run_id: String,
    /// The chat the run runs in.
    pub chat_id: String,
    /// Decisions recorded for the calls the run may wait on.
    pub decisions: Decisions,
    /// The host's part in the run's end.
    pub ending: Option<Arc<dyn RunEnding>>,
    /// What the host wrote when it created the run a moment ago, if it
    /// did: then nothing is read back before the run's first step.
    pub written: Option<Box<Written>>,
}

/// What a host wrote as it created a run, in one write: the record, under
/// this runtime's lease and with an empty log, and the chat (in `project`)
/// holding `messages` only.
#[derive(Debug, Clone)]
pub struct Written {
    /// The run's record.
    pub record: RunRecord,
    /// The chat the run runs in.
    pub chat: Chat,
    /// The chat's project.
    pub project: Project,
    /// The chat's messages, in order.
    pub messages: Vec<Message>,
}

/// What [`ChatRuntime::host`] made of a hosted run.
#[derive(Debug)]
pub enum Hosted {
    /// The run goes on: read it to drive it.
    Running(ChatRun),
    /// The run's log already holds its end, or settling its pending step
    /// ended this execution (a suspension: calls that wait for a person).
    Ended(Box<LoopResult>),
    /// The chat already ends with a final answer: nothing to run.
    Answered,
    /// The run waits for a person on these calls, and the decisions do not
    /// decide them all.
    Waiting(Vec<PendingCall>),
}

impl ChatRuntime {
    /// Executes hosted run `run.run_id` from where its record stands (see
    /// the module docs), under this worker's lease: `RunInProgress` when
    /// another worker holds it.
    pub async fn host(&self, mut run: HostedRun) -> RuntimeResult<Hosted> {
        if let Some(written) = run.written.take()
            && self.holds_lease(&written.record)
        {
            let Written {
                record,
                chat,
                project,
                messages,
            } = *written;
            let options = Self::options_of(&project, &chat)?;
            let running = self.run_messages_in(chat, options, messages, record, 0, run.ending);
            return Box::pin(running).await.map(Hosted::Running);
        }
        let record = self.claim_hosted(&run).await?;
        let log = RunLog::read(&*self.store, &record.id).await?;
        if let Some(ended) = log.ended {
            let ended = self.end_logged(record, ended, run.ending).await?;
            return Ok(Hosted::Ended(Box::new(ended)));
        }
        let state = record.state.clone();
        if let Some(state) = state.filter(|s| s.phase != RunPhase::Finished) {
            let pending = agentloop_engine::Machine::new(state.clone(), Default::default())
                .pending()
                .to_vec();
            if !pending.is_empty() {
                let decided: Decisions = run
                    .decisions
                    .into_iter()
                    .filter(|(id, _)| pending.iter().any(|p| &p.call.id == id))
                    .collect();
                if decided.len() < pending.len() {
                    Box::pin(self.hold_wait(record, &pending, run.ending)).await?;
                    return Ok(Hosted::Waiting(pending));
                }
                let decide =
                    |options, state, deps| agentloop_engine::decide(options, state, decided, deps);
                let running = self.continue_record(record, state, run.ending, decide);
                return Box::pin(running).await.map(Hosted::Running);
            }
            if is_resumable(&state) {
                let settled = Box::pin(self.settle_interrupted(
                    &run.chat_id,
                    &record,
                    state,
                    &log,
                    run.ending.clone(),
                ))
                .await?;
                if settled.ended {
                    let ended = match settled.result {
                        Some(result) => result,
                        None => self.logged_end(&record.id).await?,
                    };
                    return Ok(Hosted::Ended(Box::new(ended)));
                }
                let resume =
                    |options, state, deps| Ok(agentloop_engine::resume(options, state, deps));
                let running =
                    self.continue_record(settled.record, settled.state, run.ending, resume);
                return Box::pin(running).await.map(Hosted::Running);
            }
        }
        self.repair_dangling(&run.chat_id, &log.started).await?;
        if self.ends_with_answer(&run.chat_id).await? {
            return Ok(Hosted::Answered);
        }
        Box::pin(self.run_history_in(record, log.next_seq, run.ending))
            .await
            .map(Hosted::Running)
    }

    /// Closes what hosted run `run.run_id` waits for: every pending call is
    /// answered as cancelled and the run ends, in place, as its host
    /// decides (a person's cancel or Mark Done). `NotSuspended` when it
    /// waits for nothing.
    pub async fn cancel_waiting(&self, run: HostedRun) -> RuntimeResult<ChatRun> {
        let record = self.claim_hosted(&run).await?;
        let state = record
            .state
            .clone()
            .filter(|s| s.phase != RunPhase::Finished)
            .ok_or_else(|| RuntimeError::NotSuspended {
                chat_id: run.chat_id.clone(),
            })?;
        let cancel = agentloop_engine::cancel_waiting;
        Box::pin(self.continue_record(record, state, run.ending, cancel)).await
    }

    /// Ends hosted run `run.run_id` with `result`, as a finished loop
    /// ends: the host decides, the terminal event is logged, the record
    /// written, the host commits. Used when no loop is left to end it (its
    /// chat already holds the answer, or a person ended it while nothing
    /// executed it). A run whose log holds an end keeps it. Returns the
    /// terminal event, as logged.
    pub async fn end_hosted(&self, run: HostedRun, result: LoopResult) -> RuntimeResult<LoopEvent> {
        let record = self.claim_hosted(&run).await?;
        let log = RunLog::read(&*self.store, &record.id).await?;
        let finished = |result| LoopEvent {
            seq: log.next_seq.saturating_sub(1),
            path: RunPath::root(),
            kind: EventKind::Finished(FinishedEvent {
                result: Box::new(result),
            }),
        };
        if let Some(ended) = log.ended.clone() {
            return Ok(finished(self.end_logged(record, ended, run.ending).await?));
        }
        let chat = self.store.get_chat(&run.chat_id).await?;
        let mut persister = self
            .persister(chat, record, Gate::default(), 0)
            .continuing_at(log.next_seq)
            .with_ending(run.ending);
        persister.handle(finished(result)).await
    }

    /// Ends hosted run `run.run_id` as failed before its loop could do
    /// anything (`message` says why: a tool or server its host offers
    /// could not start), through the one end of a run: the host decides,
    /// the terminal event is logged, the record written, the host
    /// commits, the lease is released. A run whose log holds an end keeps
    /// it. Returns the terminal event, as logged; `RunInProgress` when
    /// another worker holds the run.
    pub async fn fail_hosted(&self, run: HostedRun, message: String) -> RuntimeResult<LoopEvent> {
        let result = LoopResult {
            status: LoopStatus::Error {
                error: LoopError::Host { message },
            },
            messages: Vec::new().into(),
            tokens: Default::default(),
            stop: None,
        };
        self.end_hosted(run, result).await
    }

    /// Stores that hosted run `run.run_id` waits for a person, as its host
    /// holds it (a wait whose record a crash left `running`): the record
    /// is stored `suspended`, the lease released. The host is not told: it
    /// said so, and a decision may have woken the run since it read it:
    /// the execution that decision asked for follows, and goes on from
    /// the record whatever its status. Nothing else executes it until a
    /// decision wakes it ([`wake_hosted`](Self::wake_hosted)).
    pub async fn settle_wait(&self, run: HostedRun) -> RuntimeResult<Vec<PendingCall>> {
        let record = self.claim_hosted(&run).await?;
        let pending = record
            .state
            .as_ref()
            .filter(|s| s.phase != RunPhase::Finished)
            .map(|state| {
                agentloop_engine::Machine::new(state.clone(), Default::default())
                    .pending()
                    .to_vec()
            })
            .unwrap_or_default();
        self.hold_wait(record, &pending, None).await?;
        Ok(pending)
    }

    /// Stores that the run of `record`, held under this runtime's lease,
    /// waits on `pending`: the host first, then the record, then the lease
    /// is released.
    async fn hold_wait(
        &self,
        mut record: RunRecord,
        pending: &[PendingCall],
        ending: Option<Arc<dyn RunEnding>>,
    ) -> RuntimeResult<()> {
        if let Some(ending) = &ending {
            ending
                .waits(pending, false)
                .await
                .map_err(|message| RuntimeError::Host {
                    run_id: record.id.clone(),
                    message,
                })?;
        }
        if record.status != RunStatus::Suspended {
            record.status = RunStatus::Suspended;
            record.updated_at = now_millis();
            self.store.update_run(&record).await?;
        }
        self.store.release_lease(&record.id, &self.owner).await?;
        Ok(())
    }

    /// Wakes hosted run `run.run_id`, which waits for a person, once its
    /// host recorded every decision it waits for: its record goes from
    /// `suspended` to `running` (claimable: a crash before it executes
    /// again leaves a run some worker continues), then the host is asked
    /// ([`RunEnding::wakes`]). Whether it woke, which one of several
    /// racing wakes does; the caller executes it.
    pub async fn wake_hosted(&self, run: &HostedRun) -> RuntimeResult<bool> {
        if !self.store.resume_run(&run.run_id, now_millis()).await? {
            return Ok(false);
        }
        match &run.ending {
            Some(ending) => ending.wakes().await.map_err(|message| RuntimeError::Host {
                run_id: run.run_id.clone(),
                message,
            }),
            None => Ok(true),
        }
    }

    /// Takes hosted run `run_id` over for this runtime if its lease is free
    /// when judged at `lease_now` (the time now, or the end of a lease a
    /// holder known to be gone left: taken only while it is that lease).
    /// Whether this runtime holds it now.
    pub async fn take_over(&self, run_id: &str, lease_now: i64) -> RuntimeResult<bool> {
        let now = now_millis();
        Ok(self
            .store
            .acquire_lease(run_id, &self.owner, lease_now, now + self.lease_ms)
            .await?)
    }

    /// The record of a new hosted run `run_id` in chat `chat_id`, for its
    /// host to store in the same write as its own records: `running`,
    /// with an empty log, under this runtime's lease when `leased` (then
    /// [`host`](Self::host) starts it from [`Written`] without reading it
    /// back), else free for whichever worker takes it.
    pub fn hosted_record(&self, run_id: &str, chat_id: &str, leased: bool) -> RunRecord {
        let now = now_millis();
        RunRecord {
            id: run_id.to_owned(),
            chat_id: Some(chat_id.to_owned()),
            status: RunStatus::Running,
            state: None,
            result: None,
            pending_tool_call: None,
            end_reason: None,
            lease_owner: leased.then(|| self.owner.clone()),
            lease_expires_at: leased.then(|| now + self.lease_ms),
            created_at: now,
            updated_at: now,
        }
    }

    /// The heartbeat keeping the leases of the hosted runs this runtime's
    /// owner executes (see [`crate::heartbeat`]).
    pub fn heartbeat(&self) -> Heartbeat {
        Heartbeat::new(Arc::clone(&self.store), self.owner.clone(), self.lease_ms)
    }

    /// Ends a run whose log holds its end (`ended`) but whose record may
    /// not say so yet: the record and the host are brought to that end.
    async fn end_logged(
        &self,
        record: RunRecord,
        ended: LoopResult,
        ending: Option<Arc<dyn RunEnding>>,
    ) -> RuntimeResult<LoopResult> {
        let chat_id = record.chat_id.clone().unwrap_or_default();
        let chat = self.store.get_chat(&chat_id).await?;
        let mut persister = self
            .persister(chat, record, Gate::default(), 0)
            .with_ending(ending);
        persister.finish_logged(ended).await
    }

    /// Takes the lease of a hosted run and reads its record back; a run
    /// whose record its host never stored (a crash right after it created
    /// its own) gets one now, under the lease; a record from before runs
    /// were tied to their chat is tied to it now.
    async fn claim_hosted(&self, run: &HostedRun) -> RuntimeResult<RunRecord> {
        let now = now_millis();
        let in_progress = || RuntimeError::RunInProgress {
            chat_id: run.chat_id.clone(),
            run_id: run.run_id.clone(),
        };
        match self
            .store
            .acquire_lease(&run.run_id, &self.owner, now, now + self.lease_ms)
            .await
        {
            Ok(true) => {}
            Ok(false) => return Err(in_progress()),
            Err(StorageError::NotFound { .. }) => {
                let record = self.hosted_record(&run.run_id, &run.chat_id, true);
                return match self.store.create_run(&record).await {
                    Ok(()) => Ok(record),
                    Err(StorageError::AlreadyExists { .. }) => Err(in_progress()),
                    Err(e) => Err(e.into()),
                };
            }
            Err(e) => return Err(e.into()),
        }
        let mut record = self.store.get_run(&run.run_id).await?;
        if record.chat_id.as_deref() != Some(run.chat_id.as_str()) {
            record.chat_id = Some(run.chat_id.clone());
            self.store.update_run(&record).await?;
        }
        Ok(record)
    }

    /// Whether `record` is under this runtime's lease, unexpired.
    fn holds_lease(&self, record: &RunRecord) -> bool {
        record.lease_owner.as_deref() == Some(self.owner.as_str())
            && record
                .lease_expires_at
                .is_some_and(|expires| expires > now_millis())
    }

    /// The end the run's log holds.
    async fn logged_end(&self, run_id: &str) -> RuntimeResult<LoopResult> {
        RunLog::read(&*self.store, run_id)
            .await?
            .ended
            .ok_or_else(|| RuntimeError::CorruptRun {
                run_id: run_id.to_owned(),
                message: "the run ended but its log holds no end".to_owned(),
            })
    }

    /// Whether the chat's last message is an assistant's final answer.
    async fn ends_with_answer(&self, chat_id: &str) -> RuntimeResult<bool> {
        let messages = self.store.list_messages(chat_id).await?;
        Ok(messages
            .last()
            .is_some_and(|last| is_final_answer(&last.message)))
    }
}

/// An assistant message that calls no tool.
pub(crate) fn is_final_answer(message: &Message) -> bool {
    message.role == Role::Assistant && message.tool_uses().next().is_none()
}
