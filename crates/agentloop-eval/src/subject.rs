//! What an eval runs: a [`Subject`] turns one case, in its own folder, into
//! a finished run. [`EngineSubject`] is the loop itself with a provider,
//! options and tools; the `agentloop eval` command has its own, built the
//! way `agentloop run` builds its agent.

use std::path::Path;
use std::sync::Arc;

use agentloop_engine::{LoopStrategy, RunDeps, collect};
use agentloop_types::{LoopOptions, LoopResult, Message, OutputSchema, Tool};
use async_trait::async_trait;

use crate::dataset::Case;
use crate::judge::ProviderFactory;

/// One case to run.
pub struct CaseInput<'a> {
    /// The case.
    pub case: &'a Case,
    /// The messages the run starts from.
    pub context: Vec<Message>,
    /// The case's own folder, holding its files: the tools' root.
    pub folder: &'a Path,
}

/// Why a case could not be run at all (not how its run ended: a run that
/// fails is a result, judged like any other).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SubjectError(pub String);

/// The agent under test.
#[async_trait]
pub trait Subject: Send + Sync {
    /// Runs one case to its end.
    async fn run(&self, input: CaseInput<'_>) -> Result<LoopResult, SubjectError>;
}

/// Makes the tools of one case, working in its folder.
pub type ToolFactory = Arc<dyn Fn(&Path) -> Result<Vec<Arc<dyn Tool>>, SubjectError> + Send + Sync>;

/// The options of one case's run: `options`, with the case's
/// `output_schema` when it sets one.
pub fn case_options(options: &LoopOptions, case: &Case) -> LoopOptions {
    let mut options = options.clone();
    if let Some(schema) = &case.output_schema {
        options.output_schema = Some(OutputSchema::new("answer", schema.clone()));
    }
    options
}

/// The loop as the subject: a provider (fresh for each case, see
/// [`ProviderFactory`]), the run's options, tools made in each case's folder
/// and, optionally, a strategy (default: the native loop).
pub struct EngineSubject {
    provider: ProviderFactory,
    options: LoopOptions,
    tools: Option<ToolFactory>,
    strategy: Option<Arc<dyn LoopStrategy>>,
}

impl EngineSubject {
    /// A subject with no tools running the native loop.
    pub fn new(provider: ProviderFactory, options: LoopOptions) -> Self {
        Self {
            provider,
            options,
            tools: None,
            strategy: None,
        }
    }

    /// Offers the tools `tools` makes in each case's folder.
    pub fn with_tools(mut self, tools: ToolFactory) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Runs the cases with `strategy`.
    pub fn with_strategy(mut self, strategy: Arc<dyn LoopStrategy>) -> Self {
        self.strategy = Some(strategy);
        self
    }
}

#[async_trait]
impl Subject for EngineSubject {
    async fn run(&self, input: CaseInput<'_>) -> Result<LoopResult, SubjectError> {
        let tools = match &self.tools {
            Some(tools) => tools(input.folder)?,
            None => Vec::new(),
        };
        let options = case_options(&self.options, input.case);
        let deps = RunDeps::new((self.provider)()).with_tools(tools);
        let stream = match &self.strategy {
            Some(strategy) => strategy.run(options, input.context, deps),
            None => agentloop_engine::run(options, input.context, deps),
        };
        Ok(collect(stream).await)
    }
}
