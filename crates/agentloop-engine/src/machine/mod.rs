//! The loop as a pure step machine.
//!
//! A [`Machine`] decides what happens next in one run — call the model, run
//! these tool calls, retrieve passages, finish with this result — and which
//! events that produces. It does no I/O, no async, reads no clock and no
//! randomness: run ids and time limits come in as inputs, so every decision
//! is deterministic and its state ([`RunState`]) can be stored and resumed
//! in another process.
//!
//! Every built-in strategy (native, react, llm-only, tool-first,
//! plan-and-execute) is a machine over one shared run core, which alone
//! commits messages, assigns their ids, accounts tokens and limits,
//! validates the history, answers calls that must not run, closes
//! dangling calls and emits the terminal event.
//!
//! # Call order
//!
//! ```text
//! let mut machine = Machine::new(state, options).with_tools(offered); // [OfferedTool]
//! let mut input = Input::Start;                   // first input, exactly once
//! loop {
//!     let Output { events, next } = match machine.step(input) {
//!         Ok(output) => output,
//!         Err(error) => { emit(machine.refusal(&error)); break } // the one terminal event
//!     };
//!     // emit `events` in order; store `machine.state()` if wanted
//!     input = match next {
//!         Step::CallModel { iteration, messages, tools, output } => /* stream a turn */,
//!         Step::RunTools { calls } => /* run those without an `answer`, `alone` apart;
//!                                        report every call's ToolOutcome */,
//!         Step::Retrieve { query, limit } => /* ask the retriever */,
//!         Step::Summarise { messages } => /* one quiet model turn: its text */,
//!         Step::Hook { requests } => /* ask the hooks: Input::Hooked */,
//!         Step::Done => break,                    // the last event was `finished`
//!     };
//!     // instead of any answer, the driver may send `Input::Cancelled`
//!     // (or `Input::TimedOut` once the run's deadline passed)
//! }
//! ```
//!
//! # Phases
//!
//! After each step the machine awaits exactly one kind of input
//! ([`Machine::awaiting`]):
//!
//! | [`Awaiting`] | after | accepted inputs |
//! | --- | --- | --- |
//! | `Start` | construction | [`Input::Start`] |
//! | `Model` | [`Step::CallModel`] | [`Input::ModelTurn`], [`Input::ModelFailed`], [`Input::Steer`], [`Input::Cancelled`] |
//! | `Tools` | [`Step::RunTools`] | [`Input::ToolsDone`], [`Input::Cancelled`] |
//! | `Retrieval` | [`Step::Retrieve`] | [`Input::Retrieved`], [`Input::Cancelled`] |
//! | `Summary` | [`Step::Summarise`] | [`Input::Summary`], [`Input::SummaryFailed`], [`Input::Cancelled`] |
//! | `Hooks` | [`Step::Hook`] | [`Input::Hooked`], [`Input::Cancelled`] |
//! | `Decisions` | [`Step::Done`] of a run that ended `suspended` | [`Input::Decisions`], [`Input::Cancelled`] |
//! | `Nothing` | [`Step::Done`] | none: a finished run never restarts |
//!
//! [`Input::TimedOut`] is accepted wherever [`Input::Cancelled`] is: the
//! driver sends it when the run's wall-clock limit passed, and the run ends
//! `limit_exceeded` (`timeout`) instead of `cancelled`.
//!
//! Any other input is out of phase: a bug in the driver. It trips a
//! `debug_assert` and, in release builds, returns
//! [`StepError::OutOfPhase`] and leaves the machine unchanged. `Start` on a
//! stored state that has finished returns [`StepError::Finished`].
//!
//! Waiting for a person: a tool step whose calls need approval (the
//! tool's [`ApprovalPolicy`] or `LoopOptions::approvals`) or ask a question
//! runs its other calls, then ends `suspended` (the `finished` event's
//! result holds every [`PendingCall`] and the state). A machine over that
//! state awaits [`Input::Decisions`] (or a cancel), not `Start`, and goes
//! on with the same step.
//!
//! Resuming: a machine built from a stored state and given `Start` first
//! redoes whatever was in flight when the state was stored (the same model
//! call, the same retrieval, the same tool calls — those listed in
//! [`RunState::interrupted_calls`] are answered as interrupted instead of
//! run again); a fresh state starts its strategy.
//!
//! # Shape
//!
//! This module is sans-IO by construction: no file under it reaches a
//! module outside it (not the driver, not the strategies' entry points in
//! [`strategy`](crate::strategy)), and none names async, I/O, clock or
//! randomness machinery; `cargo xtask layers` checks both. Inside, lower
//! modules never import higher ones: the protocol types ([`Input`],
//! [`Step`], [`Output`], [`Awaiting`], [`StepError`]) and the pure helpers
//! (answers, passages, output rules, compaction, waiting state) at the
//! bottom, the run core over them, the strategies' machines
//! (`strategies/`) over the core, and [`Machine`] on top.
//!
//! [`RunState`]: agentloop_types::RunState
//! [`RunState::interrupted_calls`]: agentloop_types::RunState::interrupted_calls
//! [`ApprovalPolicy`]: agentloop_types::ApprovalPolicy
//! [`PendingCall`]: agentloop_types::PendingCall

mod answers;
mod compaction;
mod context_edits;
mod handoffs;
mod hook_steps;
mod offer;
mod output;
pub(crate) mod passages;
mod protocol;
mod run;
mod run_core;
mod run_machine;
pub(crate) mod strategies;
mod strategy_machine;
mod waits;

pub(crate) use answers::INTERRUPTED_RUNNING;
pub use answers::ToolOutcome;
pub(crate) use answers::running_block;
pub use handoffs::{AgentSpec, HandoffPlan};
pub use output::check_output_schema;
pub use protocol::{Awaiting, Input, OfferedTool, Output, Step, StepError, ToolCall};
pub use run_machine::Machine;
pub(crate) use strategy_machine::StrategyMachine;

#[cfg(test)]
mod tests;
