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
//! (see [`machine`](crate::machine)) and runs on the one driver, so its
//! state can be stored and resumed with [`resume`](crate::resume).
//! Strategies other than `native` emit the seed-001 `agent_*` events with
//! their `step`. Every strategy ends with exactly one root `finished`.
//! [`resolve_strategy_name`] picks a name from a per-request override, the
//! `AGENTLOOP_AGENT_LOOP_STRATEGY` variable or the `agent.loop.strategy`
//! setting.

mod act;
mod config;
pub mod control;
pub(crate) mod llm_only;
pub(crate) mod native;
pub(crate) mod plan;
pub(crate) mod react;
pub(crate) mod tool_first;

use std::collections::BTreeMap;
use std::sync::Arc;

use agentloop_types::{LoopOptions, Message, Retriever};

pub use config::{
    AGENT_MODE_STRATEGY, DEFAULT_STRATEGY, STRATEGY_CONFIG_KEY, STRATEGY_ENV_VAR,
    resolve_strategy_name, resolve_strategy_name_from_env,
};
pub use llm_only::LlmOnlyStrategy;
pub use native::NativeStrategy;
pub use plan::PlanExecuteStrategy;
pub use react::{ACT_PROMPT, FINAL_PROMPT, OBSERVE_PROMPT, REASON_PROMPT, ReactStrategy};
pub use tool_first::ToolFirstStrategy;

use crate::{RunDeps, RunStream};

/// Name of the native strategy.
pub const NATIVE: &str = "native";
/// Name of the ReAct strategy.
pub const REACT: &str = "react";
/// Name of the LLM-only strategy.
pub const LLM_ONLY: &str = "llm-only";
/// Name of the tool-first strategy.
pub const TOOL_FIRST: &str = "tool-first";
/// Name of the plan-and-execute strategy.
pub const PLAN_AND_EXECUTE: &str = "plan-and-execute";

/// A way to run an agent: same inputs and event contract as [`run`](crate::run).
pub trait LoopStrategy: Send + Sync {
    /// The name it is registered and selected by.
    fn name(&self) -> &str;
    /// Starts a run; the stream ends with the root `finished` event.
    fn run(&self, options: LoopOptions, context: Vec<Message>, deps: RunDeps) -> RunStream;
}

impl Default for StrategyRegistry {
    fn default() -> Self {
        Self::builtin(None)
    }
}

/// Why a strategy could not be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategyError {
    /// No strategy has that name.
    #[error("unknown loop strategy `{name}`; valid strategies: {}", valid.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
        /// Every registered name, sorted.
        valid: Vec<String>,
    },
}

/// Strategies by name. [`Default`] holds the five built-in ones.
#[derive(Clone)]
pub struct StrategyRegistry {
    strategies: BTreeMap<String, Arc<dyn LoopStrategy>>,
}

impl StrategyRegistry {
    /// A registry with no strategies.
    pub fn empty() -> Self {
        Self {
            strategies: BTreeMap::new(),
        }
    }

    /// The five built-in strategies; `retriever`, when given, feeds the
    /// strategies that inject passages (native, react, llm-only,
    /// tool-first).
    pub fn builtin(retriever: Option<Arc<dyn Retriever>>) -> Self {
        let mut registry = Self::empty();
        registry.register(Arc::new(NativeStrategy {
            retriever: retriever.clone(),
            ..NativeStrategy::default()
        }));
        registry.register(Arc::new(ReactStrategy {
            retriever: retriever.clone(),
            ..ReactStrategy::default()
        }));
        registry.register(Arc::new(LlmOnlyStrategy {
            retriever: retriever.clone(),
            ..LlmOnlyStrategy::default()
        }));
        registry.register(Arc::new(ToolFirstStrategy {
            retriever,
            ..ToolFirstStrategy::default()
        }));
        registry.register(Arc::new(PlanExecuteStrategy::default()));
        registry
    }

    /// Adds (or replaces) a strategy under its name.
    pub fn register(&mut self, strategy: Arc<dyn LoopStrategy>) {
        self.strategies.insert(strategy.name().to_owned(), strategy);
    }

    /// Registered names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.strategies.keys().cloned().collect()
    }

    /// The strategy chosen by [`resolve_strategy_name_from_env`].
    pub fn select(
        &self,
        request_override: Option<&str>,
        settings: &std::collections::HashMap<String, String>,
    ) -> Result<Arc<dyn LoopStrategy>, StrategyError> {
        self.get(&resolve_strategy_name_from_env(request_override, settings))
    }

    /// The strategy named `name`.
    pub fn get(&self, name: &str) -> Result<Arc<dyn LoopStrategy>, StrategyError> {
        self.strategies
            .get(name.trim())
            .cloned()
            .ok_or_else(|| StrategyError::Unknown {
                name: name.to_owned(),
                valid: self.names(),
            })
    }
}
