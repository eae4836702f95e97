//! Strategies by name: the built-in ones, and any registered beside them.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentloop_types::Retriever;

use super::config::resolve_strategy_name_from_env;
use super::llm_only::LlmOnlyStrategy;
use super::loop_strategy::LoopStrategy;
use super::native::NativeStrategy;
use super::plan::PlanExecuteStrategy;
use super::react::ReactStrategy;
use super::tool_first::ToolFirstStrategy;

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
