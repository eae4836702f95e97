//! [`RunEnding`]: how a host that records more about a run than the
//! runtime does (a server's agent run: its task, its chain, a person's
//! cancel or Mark Done) takes part in the run's one end.
//!
//! A run's end is written once, by the runtime's persister, in this order:
//! the host [`decide`](RunEnding::decide)s the result the run ends with
//! (agreeing with an end a person recorded meanwhile), the terminal event
//! carrying it is appended, the run record is written, and only then the
//! host [`commit`](RunEnding::commit)s the end to its own record. So the
//! terminal event is durable before any status says the run ended, and
//! the record, the event and the host agree by construction.
//!
//! A run that stops to wait for a person has not ended: the host is told
//! it [`waits`](RunEnding::waits) first, then the record is stored
//! `suspended`, and only then the terminal event saying so is appended
//! and relayed. So whoever reads that a run waits (its log, a live
//! follower) finds the run waiting in both records, and a decision sent
//! at once is accepted.

use agentloop_storage::model::{EndReason, RunStatus};
use agentloop_types::{LoopResult, PendingCall};
use async_trait::async_trait;

/// The end a host decided for a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    /// The result the terminal event and the record carry.
    pub result: LoopResult,
    /// The status the run record ends with.
    pub status: RunStatus,
    /// Why, when it did not complete on its own: the record carries it,
    /// and so (in the same write) does the host's own record when the
    /// store keeps one (an agent run follows its record).
    pub reason: Option<EndReason>,
}

/// A host's part in ending a run; see the module docs.
#[async_trait]
pub trait RunEnding: Send + Sync {
    /// The end of a run whose loop finished with `result` (never a
    /// suspended one: a run that waits has not ended).
    async fn decide(&self, result: LoopResult) -> Result<Decided, String>;

    /// The end `decided` was written: the terminal event, then the run
    /// record (which moved the host's own record with it, unless a person
    /// ended that first). The host reads back how the run ended.
    async fn commit(&self, decided: &Decided) -> Result<(), String>;

    /// The run waits for a person on `pending`, under the run's lease and
    /// before its wait is stored or announced; `fresh` when its loop has
    /// just suspended (decisions of an earlier wait do not count for
    /// this one), not when it was found waiting. A host that ended the
    /// run meanwhile keeps its end: the wait is stored all the same, and
    /// the host closes it.
    async fn waits(&self, pending: &[PendingCall], fresh: bool) -> Result<(), String> {
        let _ = (pending, fresh);
        Ok(())
    }

    /// The run that waited goes on (every call it waited on is decided),
    /// its record already moved back to running by this wake: whether the
    /// host lets it (a host that ended it meanwhile does not, and closes
    /// its wait).
    async fn wakes(&self) -> Result<bool, String> {
        Ok(true)
    }
}
