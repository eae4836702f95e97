//! A run's steps: the checkpoint the runtime takes between two steps of a
//! run, kept beside the run's record so that any step stays addressable
//! by the seq of the last event logged before it (to show a run step by
//! step, or to fork it there).
//!
//! A step is cheap: it holds the run's state *without* its messages and
//! the number of messages the state had. The messages are the run's own
//! history (held whole by the record's latest state, by the chat and by
//! the log's `message_created` events): the first `message_count` of them
//! are the step's, and `last_message_id` lets a reader check that the
//! history it reads them from still starts the same way.
//!
//! How many steps a run keeps is the runtime's [`StepRetention`]: all of
//! them by default.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;

use agentloop_types::{Message, RunState, TokenTotals};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::StorageResult;
use crate::model::RunRecord;

/// One kept step of a run (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStep {
    /// The run.
    pub run_id: String,
    /// The seq of the last event the run's log held when the step was
    /// taken: the step's address.
    pub seq: u64,
    /// When it was taken (Unix ms).
    pub created_at: i64,
    /// How many messages the run's history held.
    pub message_count: u64,
    /// The id of the last of those messages, if any.
    pub last_message_id: Option<String>,
    /// The run's state with its messages left out.
    pub state: RunState,
}

impl RunStep {
    /// The step of run `run_id` whose state is `state`, at `seq`, taken
    /// at `now`: the state is kept without its messages.
    pub fn of_state(run_id: &str, seq: u64, state: &RunState, now: i64) -> Self {
        let mut kept = state.clone();
        kept.messages = Vec::<Message>::new().into();
        Self {
            run_id: run_id.to_owned(),
            seq,
            created_at: now,
            message_count: state.messages.len() as u64,
            last_message_id: state.messages.last().map(|m| m.id.clone()),
            state: kept,
        }
    }

    /// The tokens the run had spent by this step.
    pub fn tokens(&self) -> TokenTotals {
        self.state.totals
    }

    /// The state at this step over `history`, a history of the run that
    /// starts with the step's messages; `None` when it is too short or
    /// does not (its message at the step's last position differs).
    pub fn state_over(&self, history: &[Message]) -> Option<RunState> {
        let count = usize::try_from(self.message_count).ok()?;
        let messages = history.get(..count)?;
        if messages.last().map(|m| &m.id) != self.last_message_id.as_ref() {
            return None;
        }
        let mut state = self.state.clone();
        state.messages = messages.to_vec().into();
        Some(state)
    }
}

/// How many of a run's steps are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StepRetention {
    /// Every step (the default: a step costs its state without the
    /// messages, a few hundred bytes).
    #[default]
    All,
    /// The latest `n` steps; older ones are dropped as new ones come.
    Last(NonZeroU32),
    /// None: only the record's latest state, as it is replaced.
    Off,
}

impl StepRetention {
    /// How many steps a run keeps: `None` for all, `Some(0)` for none.
    pub fn keep(self) -> Option<u32> {
        match self {
            Self::All => None,
            Self::Last(n) => Some(n.get()),
            Self::Off => Some(0),
        }
    }
}

impl fmt::Display for StepRetention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("all"),
            Self::Last(n) => write!(f, "{n}"),
            Self::Off => f.write_str("none"),
        }
    }
}

/// A retention that is neither `all`, `none` nor a positive count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step retention must be `all`, `none` or a positive number of steps, not {0:?}")]
pub struct BadRetention(pub String);

impl FromStr for StepRetention {
    type Err = BadRetention;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "all" => Ok(Self::All),
            "none" | "0" => Ok(Self::Off),
            n => n
                .parse::<NonZeroU32>()
                .map(Self::Last)
                .map_err(|_| BadRetention(text.to_owned())),
        }
    }
}

/// Where a run's steps are kept.
#[async_trait]
pub trait StepStore: Send + Sync {
    /// Keeps `step` (replacing a step of its run at the same seq), then
    /// drops the run's oldest steps beyond the latest `keep` (`None`: all
    /// are kept). Its run must exist.
    async fn keep_step(&self, step: &RunStep, keep: Option<u32>) -> StorageResult<()>;
    /// Stores `run`'s record as `RunStore::update_run` does and keeps
    /// `step` as [`keep_step`](Self::keep_step) does, in one write: a
    /// checkpoint costs a run one write, not two.
    async fn update_run_keeping_step(
        &self,
        run: &RunRecord,
        step: &RunStep,
        keep: Option<u32>,
    ) -> StorageResult<()>;
    /// A run's kept steps, oldest first (none for an unknown run).
    async fn list_steps(&self, run_id: &str) -> StorageResult<Vec<RunStep>>;
    /// A run's step at `seq` (`NotFound` when none is kept there).
    async fn get_step(&self, run_id: &str, seq: u64) -> StorageResult<RunStep>;
}
