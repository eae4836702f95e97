//! Loop strategies (seed 001): interchangeable ways to run an agent over
//! the same provider, tools and event contract, injected as a value
//! (`Arc<dyn LoopStrategy>`) and chosen by name.
//!
//! | name | what it does |
//! | --- | --- |
//! | `native` | the engine's own loop ([`run`](crate::run)): every tool call of a turn runs, until the model stops. The library default. |
//! | `react` | reason → act (one tool) → observe, with control tools ([`ReactStrategy`]). The seed-001 agent mode. |
//! | `llm-only` | one plain model call, no tools. |
//! | `tool-first` | one act step (first tool call runs), then a plain answer. |
//! | `plan-and-execute` | plan steps, run each with the native loop, re-plan when one fails ([`PlanExecuteStrategy`]). |
//!
//! Each built-in strategy is a sans-IO machine over the shared run core
//! (see [`machine`](crate::machine)), which cannot reach the driver; the
//! [`LoopStrategy`] types here are only its entry points: each builds its
//! machine and starts it on the one driver, so its state can be stored and
//! resumed with [`resume`](crate::resume).
//! Strategies other than `native` emit the seed-001 `agent_*` events with
//! their `step`. Every strategy ends with exactly one root `finished`.
//! [`resolve_strategy_name`] picks a name from a per-request override, the
//! `AGENTLOOP_AGENT_LOOP_STRATEGY` variable or the `agent.loop.strategy`
//! setting.

mod config;
mod llm_only;
mod loop_strategy;
mod native;
mod plan;
mod react;
mod registry;
mod tool_first;

pub use crate::machine::strategies::control;
pub use crate::machine::strategies::names::{
    LLM_ONLY, NATIVE, PLAN_AND_EXECUTE, REACT, TOOL_FIRST,
};
pub use crate::machine::strategies::react::{
    ACT_PROMPT, FINAL_PROMPT, OBSERVE_PROMPT, REASON_PROMPT,
};
pub use config::{
    AGENT_MODE_STRATEGY, DEFAULT_STRATEGY, STRATEGY_CONFIG_KEY, STRATEGY_ENV_VAR,
    resolve_strategy_name, resolve_strategy_name_from_env,
};
pub use llm_only::LlmOnlyStrategy;
pub use loop_strategy::LoopStrategy;
pub use native::NativeStrategy;
pub use plan::PlanExecuteStrategy;
pub use react::ReactStrategy;
pub use registry::{StrategyError, StrategyRegistry};
pub use tool_first::ToolFirstStrategy;
