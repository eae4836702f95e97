//! The agent `run` and `eval` run, built from `run`'s flags: the loop
//! strategy, the provider, the loop options and the tools. One path, so an
//! eval runs exactly the agent `agentloop run` would.

use std::path::Path;
use std::sync::Arc;

use agentloop_engine::strategy::NativeStrategy;
use agentloop_engine::{Handoffs, LoopStrategy, StrategyRegistry};
use agentloop_types::{
    CompactionOptions, LoopOptions, ModelProvider, RequestOptions, Tool, VfsFor,
};

use crate::out::Failure;
use crate::providers::Chosen;
use crate::run_args::RunArgs;
use crate::{demo, output_schema, providers, tools};

/// An agent ready to run prompts.
pub struct Agent {
    /// How the loop runs.
    pub strategy: Arc<dyn LoopStrategy>,
    /// The provider and model.
    pub chosen: Chosen,
    /// The run's options (model, system prompt, limits, output schema).
    pub options: LoopOptions,
    /// The tools offered, by name.
    pub tool_names: Vec<String>,
    /// Where the memory tool keeps its files.
    pub memory: Arc<dyn VfsFor>,
}

/// Builds the agent `args` describe; `demo` plays the shipped demo in
/// place of a provider.
pub async fn build(args: &RunArgs, demo: bool) -> Result<Agent, Failure> {
    let settings = match &args.config {
        Some(path) => crate::settings::read(path).map_err(|e| Failure::usage(e.to_string()))?,
        None => Default::default(),
    };
    let strategy = StrategyRegistry::default()
        .select(args.strategy.as_deref(), &settings)
        .map_err(|e| Failure::usage(e.to_string()))?;
    if demo {
        let model = args.requested_model();
        demo::refuse_unhonoured(
            args.demo,
            model
                .as_ref()
                .map(|(model, origin)| (model.as_str(), *origin)),
            strategy.name(),
            args.output_schema.is_some(),
        )?;
    }
    let mut chosen = if demo {
        demo::provider(args.model.as_deref())?
    } else {
        providers::choose(
            args.provider.as_deref(),
            args.model.as_deref(),
            args.base_url.as_deref(),
        )
        .await?
    };
    if args.local {
        chosen.provider = crate::local_model::guarded(chosen.provider);
        chosen.context_window = Some(crate::local_model::CONTEXT_TOKENS);
    }
    let tool_names: Vec<String> = if demo && args.tools.is_empty() {
        demo::TOOLS.iter().map(|t| (*t).to_owned()).collect()
    } else {
        args.tools.clone()
    };
    let options = LoopOptions {
        request: RequestOptions {
            model: chosen.model.clone(),
            system_prompt: args.system.clone(),
            max_tokens: args.max_tokens.unwrap_or(chosen.max_tokens),
            ..RequestOptions::default()
        },
        project_id: "cli".to_owned(),
        max_iterations: args.max_iterations,
        timeout_ms: args
            .timeout
            .map(|limit| u64::try_from(limit.as_millis()).unwrap_or(u64::MAX)),
        context_window: chosen.context_window,
        compaction: CompactionOptions {
            strategy: args.compaction.into(),
            ..CompactionOptions::default()
        },
        context: args.context.options(),
        output_schema: args
            .output_schema
            .as_deref()
            .map(output_schema::load)
            .transpose()
            .map_err(Failure::Usage)?,
        ..LoopOptions::default()
    };
    // Refused before anything starts: a strategy that cannot hold its
    // answer to the schema (the engine's one rule).
    agentloop_engine::check_output_schema(strategy.name(), &options)
        .map_err(|error| Failure::usage(format!("--output-schema: {error}")))?;
    let memory = crate::memories::for_run(
        &tool_names,
        args.db.as_deref(),
        args.memory_scope.as_deref(),
    )
    .await?;
    // The native loop starts by recalling the stored memories the request
    // is about, as cited passages.
    let strategy: Arc<dyn LoopStrategy> = match memory.recall {
        Some(recall) if strategy.name() == "native" => Arc::new(NativeStrategy {
            retriever: Some(recall),
            ..NativeStrategy::default()
        }),
        _ => strategy,
    };
    let memory = memory.files;
    Ok(Agent {
        strategy,
        chosen,
        options,
        tool_names,
        memory,
    })
}

impl Agent {
    /// The named tools working in `root` (default: the current folder);
    /// a minion's children ask `provider`.
    pub fn tools(
        &self,
        root: Option<&Path>,
        provider: Arc<dyn ModelProvider>,
    ) -> Result<Vec<Arc<dyn Tool>>, Failure> {
        tools::build(
            &self.tool_names,
            root,
            Some(&self.minion(provider)),
            &self.memory,
        )
    }

    /// The agents `starting` hands off between, their tools working in
    /// `root`; `None` when it hands to none. Only the native strategy
    /// hands off: with another, declaring handoffs is a usage error.
    pub fn handoffs(
        &self,
        starting: Option<&crate::agents::Starting>,
        root: Option<&Path>,
        provider: Arc<dyn ModelProvider>,
    ) -> Result<Option<Handoffs>, Failure> {
        let Some(starting) = starting else {
            return Ok(None);
        };
        let handoffs = starting.handoffs(root, &self.minion(provider), &self.memory)?;
        if handoffs.is_some() && self.strategy.name() != "native" {
            return Err(Failure::usage(format!(
                "agent `{}` hands off, which only the native strategy does (not {})",
                starting.name,
                self.strategy.name()
            )));
        }
        Ok(handoffs)
    }

    /// What a minion's children ask: `provider`, with the run's options
    /// and no system prompt.
    fn minion(&self, provider: Arc<dyn ModelProvider>) -> tools::MinionModel {
        tools::MinionModel {
            provider,
            options: LoopOptions {
                request: RequestOptions {
                    system_prompt: None,
                    ..self.options.request.clone()
                },
                ..self.options.clone()
            },
        }
    }
}
