//! A run's lifecycle as a sans-IO machine: what a run's events, its
//! checkpoints and its end mean for its record, its lease, its log and its
//! chat, decided with no I/O, no clock (the time is an input) and no
//! async. The persister ([`crate::persist`]) is its thin driver: it feeds
//! each input in, performs the [`Effect`]s the machine queues, in order,
//! and stops at the first that fails.
//!
//! What each input asks for (every effect after the one before it):
//! - an event → it is numbered to continue the run's log and batched;
//!   - `message_created`: the lease is taken again (a worker that lost it
//!     commits nothing more), the batch is appended, the message saved
//!     (the root's to the chat, a child path's to that path's minion chat);
//!   - `tokens_consumed`: the totals are added to the chat (and the minion
//!     chat of a child path);
//!   - `tool_start`: the batch is appended, then the call is released
//!     ([`Effect::OpenGate`]);
//!   - `pending_tool_result` of a root run that writes no checkpoints: the
//!     batch is appended, the tool-call intent stored as the run's state;
//!   - the root `finished`: the lease is taken again; a suspension is
//!     stored (the host told it waits, the record `suspended`, then the
//!     event appended, then the lease released); any other end is decided
//!     by the host ([`Effect::HostDecides`], answered with
//!     [`Lifecycle::decided`]), the event carrying the decided result
//!     appended, the record written, the host commits, the lease released;
//!   - anything else waits in the batch until it is full.
//! - a checkpoint (the run's state between two steps) → the batch is
//!   appended, then the state stored with the record, then kept as the
//!   run's step at the seq of its last event (unless the run keeps no
//!   steps; see [`agentloop_storage::StepRetention`]).
//! - every append renews the lease once half of it is spent.
//!
//! So: the terminal event is durable before any record says the run
//! ended; a wait is stored before the event announcing it; the lease is
//! released once, at the end.

use std::collections::VecDeque;

use agentloop_storage::RunStep;
use agentloop_storage::model::{EndReason, RunRecord, RunStatus};
use agentloop_types::{
    EventKind, FinishedEvent, LoopError, LoopEvent, LoopResult, LoopStatus, Message,
    MessageCreatedEvent, PendingCall, PendingToolResultEvent, Role, RunPath, RunPhase, RunState,
    TokenTotals, TokensConsumedEvent, ToolResultRenderBlock, ToolStartEvent,
};

use crate::ending::Decided;

/// Events batched before the log is appended regardless of commit points.
/// Small: a slowly streaming run holds its batch (hundreds of bytes an
/// event) between appends, and concurrent appends are committed together
/// anyway.
const LOG_BATCH: usize = 8;

/// One thing the driver does for the machine.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Effect {
    /// Append these events to the run's log.
    Append(Vec<LoopEvent>),
    /// Take the run's lease from `now` until `expires`; a refusal means
    /// another worker holds the run: the driver stops (`LeaseLost`).
    TakeLease {
        /// The time the lease is judged at.
        now: i64,
        /// Its new expiry.
        expires: i64,
    },
    /// Give the lease up.
    ReleaseLease,
    /// Save a message in the chat of `path` (a child path's minion chat).
    /// Its `message_created` event, `seq`, is stored first, so a store may
    /// keep the message there alone.
    SaveMessage {
        /// The run path that committed it.
        path: RunPath,
        /// The message.
        message: Message,
        /// The seq of the event that logged it.
        seq: u64,
    },
    /// Add tokens to the chat's totals, and to the minion chat of `path`
    /// when it is a child's.
    AddTotals {
        /// The run path that spent them.
        path: RunPath,
        /// The tokens.
        tokens: TokenTotals,
        /// The time of the update.
        now: i64,
    },
    /// Write the run's record as it stands.
    StoreRecord(Box<RunRecord>),
    /// Write the run's record as it stands and keep its step (its state
    /// between two steps) in the same write, dropping the oldest steps
    /// beyond `keep` (`None`: all are kept).
    StoreRecordKeeping {
        /// The record.
        record: Box<RunRecord>,
        /// The step.
        step: Box<RunStep>,
        /// How many of the run's steps are kept.
        keep: Option<u32>,
    },
    /// Release tool call `0`: its start is in the log.
    OpenGate(String),
    /// Tell the host the run waits on `pending` (`fresh`: its loop has
    /// just suspended).
    HostWaits {
        /// What it waits on.
        pending: Vec<PendingCall>,
        /// Whether the wait is new.
        fresh: bool,
    },
    /// Ask the host which end the run takes, given the result its loop
    /// finished with; the answer goes to [`Lifecycle::decided`].
    HostDecides(Box<LoopResult>),
    /// Tell the host the end it decided is recorded.
    HostCommits(Box<Decided>),
}

/// The end of a run that is being decided: the terminal event waiting for
/// the host's decision.
#[derive(Debug)]
struct Deciding {
    event: LoopEvent,
    /// Whether the log already holds it (see [`Lifecycle::finish_logged`]).
    logged: bool,
}

/// One run's lifecycle; see the module docs.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    run: RunRecord,
    lease_ms: i64,
    owner: String,
    /// Messages of the context the run started from.
    context_len: usize,
    /// Whether a host takes part in the run's end.
    hosted: bool,
    /// The seq the next event gets: the log continues across attempts.
    next_seq: u64,
    batch: Vec<LoopEvent>,
    batch_size: usize,
    /// Whether the run writes checkpoints.
    checkpointed: bool,
    /// How many steps the run keeps (`None`: all, `Some(0)`: none).
    keep_steps: Option<u32>,
    last_assistant: Option<Message>,
    totals: TokenTotals,
    deciding: Option<Deciding>,
    /// Whether the run's terminal event was handed to the driver to append.
    terminal_sent: bool,
    result: Option<LoopResult>,
    effects: VecDeque<Effect>,
    /// Events as stored, for the driver to yield.
    stored: VecDeque<LoopEvent>,
}

impl Lifecycle {
    /// The lifecycle of `run`, executed by `owner` under leases of
    /// `lease_ms`, from a context of `context_len` messages.
    pub(crate) fn new(run: RunRecord, owner: String, lease_ms: i64, context_len: usize) -> Self {
        Self {
            run,
            lease_ms,
            owner,
            context_len,
            hosted: false,
            next_seq: 0,
            batch: Vec::new(),
            batch_size: LOG_BATCH,
            checkpointed: false,
            keep_steps: None,
            last_assistant: None,
            totals: TokenTotals::default(),
            deciding: None,
            terminal_sent: false,
            result: None,
            effects: VecDeque::new(),
            stored: VecDeque::new(),
        }
    }

    /// Numbers events from `next_seq`, continuing the run's log.
    pub(crate) fn continuing_at(&mut self, next_seq: u64) {
        self.next_seq = next_seq;
    }

    /// Keeps the run's latest `keep` steps (`None`: all, `Some(0)`: none;
    /// all by default).
    pub(crate) fn keeping_steps(&mut self, keep: Option<u32>) {
        self.keep_steps = keep;
    }

    /// A host takes part in the run's end. Its followers (other instances
    /// included) read the log, so each event is appended before it is
    /// yielded.
    pub(crate) fn hosted(&mut self) {
        self.hosted = true;
        self.batch_size = 1;
    }

    /// The run's record as the machine holds it.
    pub(crate) fn record(&self) -> &RunRecord {
        &self.run
    }

    /// How the run ended (or stopped to wait) here, once every effect of
    /// its end was performed.
    pub(crate) fn ended_with(&self) -> Option<&LoopResult> {
        self.result
            .as_ref()
            .filter(|_| self.effects.is_empty() && self.deciding.is_none())
    }

    /// The next thing to do, in order.
    pub(crate) fn poll_effect(&mut self) -> Option<Effect> {
        let effect = self.effects.pop_front()?;
        if let Effect::Append(events) = &effect
            && events.iter().any(is_root_end)
        {
            self.terminal_sent = true;
        }
        Some(effect)
    }

    /// The next event as stored, once every effect before it was done.
    pub(crate) fn poll_stored(&mut self) -> Option<LoopEvent> {
        if self.effects.is_empty() && self.deciding.is_none() {
            self.stored.pop_front()
        } else {
            None
        }
    }

    /// One event of the run, at `now`.
    pub(crate) fn event(&mut self, mut event: LoopEvent, now: i64) {
        event.seq = self.next_seq;
        self.next_seq += 1;
        let root = event.path.is_root();
        if root && let EventKind::Finished(FinishedEvent { result }) = &event.kind {
            let result = LoopResult::clone(result);
            self.take_lease(now);
            if let LoopStatus::Suspended { pending, .. } = &result.status {
                self.suspend(event.clone(), &result, pending.clone(), now);
                return;
            }
            if self.hosted {
                self.effects
                    .push_back(Effect::HostDecides(Box::new(result)));
                self.deciding = Some(Deciding {
                    event,
                    logged: false,
                });
            } else {
                self.end(event, unhosted(result), now);
            }
            return;
        }
        if root && matches!(event.kind, EventKind::MessageCreated(_)) {
            // A worker that lost the run commits nothing more of it.
            self.take_lease(now);
        }
        self.batch.push(event.clone());
        match &event.kind {
            EventKind::MessageCreated(MessageCreatedEvent { message }) => {
                self.append(now);
                if root && message.role == Role::Assistant {
                    self.last_assistant = Some(message.clone());
                }
                self.effects.push_back(Effect::SaveMessage {
                    path: event.path.clone(),
                    message: message.clone(),
                    seq: event.seq,
                });
            }
            EventKind::TokensConsumed(TokensConsumedEvent { tokens }) => {
                if root {
                    self.totals += *tokens;
                }
                self.effects.push_back(Effect::AddTotals {
                    path: event.path.clone(),
                    tokens: *tokens,
                    now,
                });
            }
            EventKind::PendingToolResult(PendingToolResultEvent { message_id, blocks })
                if root && !self.checkpointed =>
            {
                self.record_intent(message_id, blocks, now);
            }
            EventKind::ToolStart(ToolStartEvent { tool_use_id, .. }) => {
                self.append(now);
                self.effects
                    .push_back(Effect::OpenGate(tool_use_id.clone()));
            }
            _ => self.append_when_full(now),
        }
        self.stored.push_back(event);
    }

    /// The host's answer to [`Effect::HostDecides`].
    pub(crate) fn decided(&mut self, decided: Decided, now: i64) {
        match self.deciding.take() {
            Some(Deciding { logged: true, .. }) => self.record_end(decided, now),
            Some(Deciding { event, .. }) => self.end(event, decided, now),
            None => {}
        }
    }

    /// The run's state between two steps, at `now`. After the end (a
    /// suspended run's last state) the record is final and nothing is
    /// stored.
    pub(crate) fn checkpoint(&mut self, state: RunState, now: i64) {
        if self.result.is_some() {
            return;
        }
        self.checkpointed = true;
        self.append(now);
        let step = (self.keep_steps != Some(0)).then(|| {
            let seq = self.next_seq.saturating_sub(1);
            RunStep::of_state(&self.run.id, seq, &state, now)
        });
        self.run.state = Some(state);
        self.run.updated_at = now;
        match step {
            Some(step) => self.effects.push_back(Effect::StoreRecordKeeping {
                record: Box::new(self.run.clone()),
                step: Box::new(step),
                keep: self.keep_steps,
            }),
            None => self.store_record(),
        }
    }

    /// Appends what is batched, and renews the lease once half spent.
    pub(crate) fn append(&mut self, now: i64) {
        if !self.batch.is_empty() {
            self.effects
                .push_back(Effect::Append(std::mem::take(&mut self.batch)));
        }
        if self
            .run
            .lease_expires_at
            .is_none_or(|expires| expires - now < self.lease_ms / 2)
        {
            self.take_lease(now);
        }
    }

    /// Gives the lease up.
    pub(crate) fn release(&mut self) {
        self.effects.push_back(Effect::ReleaseLease);
        self.run.lease_owner = None;
        self.run.lease_expires_at = None;
    }

    /// Ends a run whose log already holds its end (`result`), written by
    /// an attempt that stopped before it recorded it: the host decides
    /// again, the record is written, the host commits.
    pub(crate) fn finish_logged(&mut self, result: LoopResult, now: i64) {
        self.take_lease(now);
        if self.hosted && !matches!(result.status, LoopStatus::Suspended { .. }) {
            let event = LoopEvent {
                seq: self.next_seq.saturating_sub(1),
                path: RunPath::root(),
                kind: EventKind::Finished(FinishedEvent {
                    result: Box::new(result.clone()),
                }),
            };
            self.effects
                .push_back(Effect::HostDecides(Box::new(result)));
            self.deciding = Some(Deciding {
                event,
                logged: true,
            });
        } else {
            self.record_end(unhosted(result), now);
        }
    }

    /// Ends a run that cannot go on (its stream stopped without a result,
    /// or an effect failed; `why` says which) as its loop would have: a
    /// terminal event with the error is appended, the record says
    /// `failed`, the lease is released. The host is not asked: it may be
    /// what failed; it ends its own record from the logged end (see
    /// [`Lifecycle::finish_logged`]). What was left undone is dropped. A
    /// run whose terminal event was already handed to the driver keeps
    /// it: a record behind its log is brought to it by whoever takes the
    /// run next.
    pub(crate) fn abandon(&mut self, why: String, now: i64) {
        self.effects.clear();
        self.deciding = None;
        if self.terminal_sent {
            return;
        }
        let reason = EndReason::new("executor", why.clone());
        let result = LoopResult {
            status: LoopStatus::Error {
                error: LoopError::Host { message: why },
            },
            messages: Vec::new().into(),
            tokens: self.totals,
            stop: None,
        };
        let event = LoopEvent {
            seq: self.next_seq,
            path: RunPath::root(),
            kind: EventKind::Finished(FinishedEvent {
                result: Box::new(result.clone()),
            }),
        };
        self.next_seq += 1;
        self.take_lease(now);
        self.batch.push(event);
        self.append(now);
        let decided = Decided {
            status: RunStatus::Failed,
            reason: Some(reason),
            result,
        };
        self.write_record(&decided, now);
        self.release();
        self.result = Some(decided.result);
    }

    /// Stores a run that stops to wait for a person: the host is told,
    /// the record stored `suspended`, then the event announcing it
    /// appended and the lease released.
    fn suspend(
        &mut self,
        event: LoopEvent,
        result: &LoopResult,
        pending: Vec<PendingCall>,
        now: i64,
    ) {
        if self.hosted {
            self.effects.push_back(Effect::HostWaits {
                pending,
                fresh: true,
            });
        }
        let decided = Decided {
            status: RunStatus::Suspended,
            reason: None,
            result: result.clone(),
        };
        self.write_record(&decided, now);
        self.batch.push(event.clone());
        self.append(now);
        self.release();
        self.result = Some(decided.result);
        self.stored.push_back(event);
    }

    /// Ends the run as `decided`: the terminal event carrying the decided
    /// result is appended, then the record written and the host commits.
    fn end(&mut self, mut event: LoopEvent, decided: Decided, now: i64) {
        if let EventKind::Finished(FinishedEvent { result }) = &mut event.kind {
            **result = decided.result.clone();
        }
        self.batch.push(event.clone());
        self.append(now);
        self.record_end(decided, now);
        self.stored.push_back(event);
    }

    /// The record says the run ended as `decided`; the host commits while
    /// the lease is still held (a host that watches its leases gives up a
    /// run whose lease is gone, and must not between the record and the
    /// commit); then the lease is released.
    fn record_end(&mut self, decided: Decided, now: i64) {
        self.write_record(&decided, now);
        if self.hosted && !matches!(decided.result.status, LoopStatus::Suspended { .. }) {
            self.effects
                .push_back(Effect::HostCommits(Box::new(decided.clone())));
        }
        self.release();
        self.result = Some(decided.result);
    }

    /// The record of a run that ended or waits as `decided` says: status,
    /// result (its last answer only: the chat holds the messages, see
    /// [`crate::stored`]), pending call and the state it waits in.
    fn write_record(&mut self, decided: &Decided, now: i64) {
        let result = &decided.result;
        // A suspended run's state is kept as the run's state, not twice.
        let mut status = result.status.clone();
        let waiting = match &mut status {
            LoopStatus::Suspended { state, .. } => state.take(),
            _ => None,
        };
        let own = crate::stored::record_result(
            &LoopResult {
                status,
                ..LoopResult::clone(result)
            },
            self.context_len,
        );
        self.run.status = decided.status;
        self.run.end_reason.clone_from(&decided.reason);
        self.run.pending_tool_call = match &result.status {
            LoopStatus::Suspended { pending, .. } => pending.first().map(|p| p.call.clone()),
            _ => None,
        };
        if let Some(state) = waiting {
            self.run.state = Some(*state);
        } else if let Some(state) = self.run.state.as_mut() {
            crate::stored::finished_state(state, result);
        }
        // A result is plain data: serialising it cannot fail short of a
        // bug, and then the record says so rather than holding nothing.
        self.run.result = Some(serde_json::to_value(&own).unwrap_or_else(|e| {
            serde_json::json!({
                "status": "error",
                "error": format!("the run's result could not be stored: {e}"),
            })
        }));
        self.run.updated_at = now;
        self.store_record();
    }

    /// The tool-call intent of a run that writes no checkpoints: a state
    /// with phase `run_tools` holding the pending calls.
    fn record_intent(&mut self, message_id: &str, blocks: &[ToolResultRenderBlock], now: i64) {
        let calls = self
            .last_assistant
            .iter()
            .flat_map(|m| m.tool_uses())
            .filter(|c| blocks.iter().any(|b| b.tool_use_id == c.id))
            .cloned()
            .collect();
        let mut state = RunState::new(self.run.id.clone(), Vec::new());
        state.totals = self.totals;
        state.phase = RunPhase::RunTools {
            result_message_id: message_id.to_owned(),
            calls,
        };
        self.run.state = Some(state);
        self.run.updated_at = now;
        self.append(now);
        self.store_record();
    }

    fn append_when_full(&mut self, now: i64) {
        if self.batch.len() >= self.batch_size {
            self.append(now);
        }
    }

    fn take_lease(&mut self, now: i64) {
        let expires = now + self.lease_ms;
        self.effects.push_back(Effect::TakeLease { now, expires });
        self.run.lease_owner = Some(self.owner.clone());
        self.run.lease_expires_at = Some(expires);
    }

    fn store_record(&mut self) {
        self.effects
            .push_back(Effect::StoreRecord(Box::new(self.run.clone())));
    }
}

/// A root run's terminal event.
fn is_root_end(event: &LoopEvent) -> bool {
    event.path.is_root() && matches!(event.kind, EventKind::Finished(_))
}

/// The end of a run no host takes part in: the status its result asks
/// for, no reason.
pub(crate) fn unhosted(result: LoopResult) -> Decided {
    Decided {
        status: run_status(&result.status),
        reason: None,
        result,
    }
}

/// The stored status of a run that ended with `status`.
pub(crate) fn run_status(status: &LoopStatus) -> RunStatus {
    match status {
        LoopStatus::Complete { .. }
        | LoopStatus::MaxIterations
        | LoopStatus::LimitExceeded { .. } => RunStatus::Completed,
        LoopStatus::Suspended { .. } => RunStatus::Suspended,
        LoopStatus::Error { .. } => RunStatus::Failed,
        LoopStatus::Cancelled => RunStatus::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: i64 = 1_000;

    fn record() -> RunRecord {
        RunRecord {
            id: "r1".into(),
            chat_id: Some("c1".into()),
            status: RunStatus::Running,
            state: None,
            result: None,
            pending_tool_call: None,
            end_reason: None,
            lease_owner: None,
            lease_expires_at: None,
            created_at: 0,
            updated_at: 0,
        }
    }

    fn event(kind: EventKind) -> LoopEvent {
        LoopEvent {
            seq: 0,
            path: RunPath::root(),
            kind,
        }
    }

    fn finished(status: LoopStatus) -> LoopEvent {
        event(EventKind::Finished(FinishedEvent {
            result: Box::new(LoopResult {
                status,
                messages: Vec::new().into(),
                tokens: TokenTotals::default(),
                stop: None,
            }),
        }))
    }

    fn drain(machine: &mut Lifecycle) -> Vec<Effect> {
        std::iter::from_fn(|| machine.poll_effect()).collect()
    }

    /// The effects by name, to read an order at a glance.
    fn names(effects: &[Effect]) -> Vec<String> {
        effects
            .iter()
            .map(|effect| match effect {
                Effect::Append(events) => format!(
                    "append {}",
                    events
                        .iter()
                        .map(|e| e.seq.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                Effect::TakeLease { .. } => "take lease".into(),
                Effect::ReleaseLease => "release lease".into(),
                Effect::SaveMessage { .. } => "save message".into(),
                Effect::AddTotals { .. } => "add totals".into(),
                Effect::StoreRecord(record) => format!("store {:?}", record.status),
                Effect::StoreRecordKeeping { record, step, .. } => {
                    format!("store {:?} keeping step {}", record.status, step.seq)
                }
                Effect::OpenGate(id) => format!("open {id}"),
                Effect::HostWaits { .. } => "host waits".into(),
                Effect::HostDecides(_) => "host decides".into(),
                Effect::HostCommits(_) => "host commits".into(),
            })
            .collect()
    }

    #[test]
    fn a_message_is_logged_under_the_lease_before_it_is_saved() {
        let mut machine = Lifecycle::new(record(), "w1".into(), LEASE, 0);
        machine.event(
            event(EventKind::MessageCreated(MessageCreatedEvent {
                message: Message::user_text("m1", "hi"),
            })),
            10,
        );
        assert!(
            machine.poll_stored().is_none(),
            "nothing is yielded before it is stored"
        );
        assert_eq!(
            names(&drain(&mut machine)),
            ["take lease", "append 0", "save message"]
        );
        assert_eq!(machine.poll_stored().map(|e| e.seq), Some(0));
    }

    #[test]
    fn a_checkpoint_is_kept_as_a_step_at_its_last_events_seq_after_the_record() {
        let message = |id: &str| {
            event(EventKind::MessageCreated(MessageCreatedEvent {
                message: Message::user_text(id, "hi"),
            }))
        };
        let mut machine = Lifecycle::new(record(), "w1".into(), LEASE, 0);
        machine.continuing_at(4);
        machine.event(message("m1"), 10);
        drain(&mut machine);
        let state = RunState::new("r1".to_owned(), vec![Message::user_text("m1", "hi")]);
        machine.checkpoint(state.clone(), 11);
        let effects = drain(&mut machine);
        assert_eq!(names(&effects), ["store Running keeping step 4"]);
        let Some(Effect::StoreRecordKeeping {
            step, keep: None, ..
        }) = effects.last()
        else {
            panic!("{effects:?}");
        };
        assert_eq!(step.message_count, 1);
        assert!(step.state.messages.is_empty(), "messages are not copied");

        let mut machine = Lifecycle::new(record(), "w1".into(), LEASE, 0);
        machine.keeping_steps(Some(0));
        machine.checkpoint(state, 11);
        assert_eq!(names(&drain(&mut machine)), ["take lease", "store Running"]);
    }

    #[test]
    fn the_lease_is_renewed_once_half_spent_by_the_time_given() {
        let mut machine = Lifecycle::new(record(), "w1".into(), LEASE, 0);
        machine.append(0);
        assert_eq!(names(&drain(&mut machine)), ["take lease"]);
        machine.append(LEASE / 2 - 1);
        assert!(drain(&mut machine).is_empty(), "the lease is still fresh");
        machine.append(LEASE / 2 + 1);
        assert_eq!(
            drain(&mut machine),
            [Effect::TakeLease {
                now: LEASE / 2 + 1,
                expires: LEASE / 2 + 1 + LEASE
            }]
        );
    }

    #[test]
    fn an_end_is_logged_before_the_record_says_so_and_the_lease_goes_once() {
        let mut machine = Lifecycle::new(record(), "w1".into(), LEASE, 0);
        machine.event(
            finished(LoopStatus::Complete {
                return_value: None,
                output: None,
            }),
            5,
        );
        let effects = drain(&mut machine);
        assert_eq!(
            names(&effects),
            ["take lease", "append 0", "store Completed", "release lease"]
        );
        assert!(machine.ended_with().is_some());
        machine.checkpoint(RunState::new("r1".to_owned(), Vec::new()), 6);
        assert!(
            drain(&mut machine).is_empty(),
            "an ended run's record is final"
        );
    }

    #[test]
    fn a_wait_is_stored_before_the_event_announcing_it() {
        let mut machine = Lifecycle::new(record(), "w1".into(), LEASE, 0);
        machine.hosted();
        machine.event(
            finished(LoopStatus::Suspended {
                pending: Vec::new(),
                state: None,
            }),
            5,
        );
        assert_eq!(
            names(&drain(&mut machine)),
            [
                "take lease",
                "host waits",
                "store Suspended",
                "append 0",
                "release lease"
            ]
        );
    }

    #[test]
    fn a_hosted_end_is_the_host_s_decision_and_the_host_commits_under_the_lease() {
        let mut machine = Lifecycle::new(record(), "w1".into(), LEASE, 0);
        machine.hosted();
        machine.event(finished(LoopStatus::MaxIterations), 5);
        let asked = drain(&mut machine);
        assert_eq!(names(&asked), ["take lease", "host decides"]);
        assert!(
            machine.poll_stored().is_none(),
            "the end waits for the host"
        );
        let Some(Effect::HostDecides(result)) = asked.into_iter().last() else {
            panic!("the host is asked");
        };
        let cancelled = LoopResult {
            status: LoopStatus::Cancelled,
            ..*result
        };
        machine.decided(
            Decided {
                status: RunStatus::Cancelled,
                reason: None,
                result: cancelled,
            },
            6,
        );
        assert_eq!(
            names(&drain(&mut machine)),
            [
                "append 0",
                "store Cancelled",
                "host commits",
                "release lease"
            ]
        );
        let stored = machine.poll_stored().map(|e| e.kind);
        let Some(EventKind::Finished(FinishedEvent { result })) = stored else {
            panic!("the terminal event is yielded");
        };
        assert_eq!(
            result.status,
            LoopStatus::Cancelled,
            "it carries the decision"
        );
    }

    #[test]
    fn an_abandoned_run_ends_with_one_terminal_event() {
        let mut machine = Lifecycle::new(record(), "w1".into(), LEASE, 0);
        // A child's event waits in the batch when the store fails.
        let child = LoopEvent {
            seq: 0,
            path: RunPath(vec!["call_1".into()]),
            kind: EventKind::FirstChunk,
        };
        machine.event(child, 1);
        assert!(drain(&mut machine).is_empty());
        machine.abandon("the store went away".into(), 2);
        let effects = drain(&mut machine);
        assert_eq!(
            names(&effects),
            ["take lease", "append 0,1", "store Failed", "release lease"]
        );
        let Effect::Append(events) = &effects[1] else {
            panic!("an append");
        };
        let EventKind::Finished(FinishedEvent { result }) = &events[1].kind else {
            panic!("the terminal event");
        };
        assert_eq!(
            result.status,
            LoopStatus::Error {
                error: LoopError::Host {
                    message: "the store went away".into()
                }
            }
        );
        // An end already handed over is not logged twice.
        machine.abandon("again".into(), 3);
        assert!(drain(&mut machine).is_empty());
    }
}
