//! `agentloop eval DATASET`: runs a dataset of cases against the agent
//! `agentloop run` would build from the same flags ([`crate::agent`]), each
//! case in a temporary folder of its own (the tools' root) with the
//! `AGENTS.md` instructions of the folder the eval runs in, and reports:
//! a table (or JSON) on stdout, `--report` JSON, `--junit` XML, and with
//! `--compare` the regressions against an earlier report. The library does
//! the work ([`agentloop_eval`]); this module builds its subject and judge
//! from flags and draws the progress bar.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_engine::{RunDeps, collect};
use agentloop_eval::{
    CaseInput, Comparison, Judge, Progress, ProviderFactory, Report, Runner, Subject, SubjectError,
};
use agentloop_types::{
    ApprovalPolicies, CancellationToken, Hooks, LoopResult, LoopStatus, ModelProvider,
};
use async_trait::async_trait;
use clap::{Args, ValueEnum};

use crate::agent::{self, Agent};
use crate::out::{Failure, Outcome, Stdout};
use crate::run_args::{CompactionArg, RunArgs};
use crate::{approve, demo, providers};

/// The exit codes of `eval`, shown at the end of its `--help`.
pub const EXIT_CODES: &str = "\
Exit codes:
  0    every case passed (with --compare: no case regressed)
  1    a case failed (with --compare: a case regressed), or the eval could not run
  2    usage error (bad flags, a malformed dataset or report)";

/// What stdout shows.
#[derive(Clone, Copy, ValueEnum)]
pub enum EvalFormat {
    /// A table: a row per case, failures under it, totals.
    Table,
    /// The report as JSON.
    Json,
}

#[derive(Args)]
pub struct EvalArgs {
    /// The dataset: a YAML, JSON or JSON Lines file of cases (see the
    /// README's "Evals").
    pub dataset: PathBuf,
    /// Run each case this many times (a case's own `repeat` wins).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Run at most this many cases at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
    /// Run only the cases with this tag (repeatable: any of them).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// What stdout shows: the table, or the report as JSON.
    #[arg(long, value_enum, default_value_t = EvalFormat::Table)]
    pub format: EvalFormat,
    /// Write the report as JSON to FILE (what --compare reads).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Write the report as JUnit XML to FILE, for CI systems.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Compare with an earlier report (--report's JSON): name the cases
    /// that got worse, and exit 1 when one did.
    #[arg(long, value_name = "EARLIER.json")]
    pub compare: Option<PathBuf>,
    /// The provider of the LLM judge (cases with `expect.judge`), as
    /// --provider takes it (default: the agent's provider).
    #[arg(long, value_name = "PROVIDER")]
    pub judge_provider: Option<String>,
    /// The judge's model (default: the agent's model, or the judge
    /// provider's default).
    #[arg(long, value_name = "MODEL")]
    pub judge_model: Option<String>,
    /// Play the shipped demo conversation as the agent: no key, no network.
    #[arg(long, conflicts_with_all = ["provider", "model", "base_url", "strategy"])]
    pub demo: bool,
    /// Evaluate the local model (as `agentloop run --local`): start or
    /// reuse the llama-server that `scripts/local-model.sh` built.
    #[arg(long, conflicts_with_all = ["demo", "provider", "base_url"])]
    pub local: bool,
    /// The agent's provider, as `agentloop run --provider` takes it
    /// (scripted:FILE plays the script from its start for every run).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id (as for `agentloop run`).
    #[arg(long)]
    pub model: Option<String>,
    /// The provider's base URL.
    #[arg(long)]
    pub base_url: Option<String>,
    /// System prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Output token cap per model turn (at least 1; default as for
    /// `agentloop run`: from the model table, 1024 for a model it does not
    /// know, 128 with --local).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
    /// Model turns before a run stops (at least 1).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: u32,
    /// Tools to offer, comma-separated; fs and js work in each case's
    /// folder.
    #[arg(long, value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Database the memory tool keeps its files in (as for `agentloop
    /// run`); every case reads and writes the same memories.
    #[arg(long)]
    pub db: Option<String>,
    /// Whose memories the memory tool keeps (as for `agentloop run`).
    #[arg(long)]
    pub memory_scope: Option<String>,
    /// Loop strategy (as for `agentloop run`).
    #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub strategy: Option<String>,
    /// Settings file (as for `agentloop run`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Which tool calls run without asking (default: all, each case having
    /// a folder of its own); calls left to ask are rejected, as no person
    /// is there to approve them.
    #[arg(long, value_name = "all|none|TOOL,...")]
    pub approve: Option<String>,
    /// Whether `model` was given as `--model`.
    #[arg(skip)]
    pub model_flag: bool,
}

impl EvalArgs {
    /// `run`'s flags for the agent these flags describe.
    fn run_args(&self) -> RunArgs {
        RunArgs {
            prompt: None,
            demo: self.demo,
            local: self.local,
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            system: self.system.clone(),
            agent: None,
            starting: None,
            max_tokens: self.max_tokens,
            timeout: None,
            max_iterations: self.max_iterations,
            compaction: CompactionArg::None,
            context: crate::context_args::ContextArgs::default(),
            tools: self.tools.clone(),
            no_ask_user: true,
            root: None,
            db: self.db.clone(),
            memory_scope: self.memory_scope.clone(),
            json: false,
            strategy: self.strategy.clone(),
            config: self.config.clone(),
            skills: None,
            mcp: crate::mcp_flags::McpFlags::default(),
            mcp_prompt: None,
            mcp_args: Vec::new(),
            a2a: Vec::new(),
            approve: self.approve.clone(),
            output_schema: None,
            model_flag: self.model_flag,
        }
    }
}

/// Runs the eval.
pub async fn eval(mut args: EvalArgs, approvals: ApprovalPolicies, hooks: Hooks) -> Outcome {
    let dataset =
        agentloop_eval::dataset::load(&args.dataset).map_err(|e| Failure::usage(e.to_string()))?;
    if args.local {
        // The cases bring their own system messages: only the token cap
        // is defaulted.
        crate::local_model::setup(crate::local_model::Flags {
            provider: &mut args.provider,
            base_url: &mut args.base_url,
            model: &mut args.model,
            model_flag: args.model_flag,
            system: None,
            max_tokens: &mut args.max_tokens,
            tools: &args.tools,
        })
        .await?;
    }
    let earlier = args.compare.as_deref().map(read_report).transpose()?;
    let run_args = args.run_args();
    let demo = demo::wanted(
        run_args.demo,
        run_args.provider.as_deref(),
        run_args.base_url.as_deref(),
    );
    if demo && !args.demo {
        return Err(Failure::usage(format!(
            "{} For an eval of the shipped demo, pass --demo.",
            providers::NO_KEY
        )));
    }
    let mut agent = agent::build(&run_args, demo).await?;
    // The instructions of the project the eval runs in, as `run` reads
    // them; the cases' own folders hold only their files.
    agent.options.request.system_prompt =
        crate::project_instructions::with_system(None, agent.options.request.system_prompt.take())?;
    let provider = source(args.provider.as_deref(), agent.chosen.provider.clone())?;
    let subject = CliSubject {
        agent,
        provider,
        approvals,
        hooks,
    };
    let needs_judge = dataset.cases.iter().any(|c| c.expect.judge.is_some());
    let judge = if needs_judge {
        Some(judge(&args, &subject).await?)
    } else {
        None
    };
    let live = std::io::stderr().is_terminal();
    let mut runner = Runner::new(Arc::new(subject))
        .repeats(args.repeat)
        .concurrency(args.concurrency as usize)
        .tags(args.tags.clone());
    if let Some(judge) = judge {
        runner = runner.judge(judge);
    }
    if live {
        runner = runner.on_progress(Arc::new(draw_progress));
    }
    let report = runner.run(&dataset).await;
    if live {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
    let report = report.map_err(|e| Failure::usage(e.to_string()))?;
    if let Some(path) = &args.report {
        write(path, &report.to_json())?;
    }
    if let Some(path) = &args.junit {
        write(path, &agentloop_eval::junit::render(&report))?;
    }
    let mut stdout = Stdout::new();
    match args.format {
        EvalFormat::Table => {
            for line in agentloop_eval::table::render(&report).lines() {
                stdout.line(line)?;
            }
        }
        EvalFormat::Json => stdout.line(report.to_json())?,
    }
    let Some(earlier) = earlier else {
        return Ok(ExitCode::from(if report.passed() { 0 } else { 1 }));
    };
    let comparison = Comparison::new(&earlier, &report);
    // With the table the comparison follows it; with JSON, stdout stays
    // one document and the comparison goes to stderr.
    for line in comparison.render().lines() {
        match args.format {
            EvalFormat::Table => stdout.line(line)?,
            EvalFormat::Json => eprintln!("{line}"),
        }
    }
    Ok(ExitCode::from(if comparison.regressed() { 1 } else { 0 }))
}

/// The progress bar on stderr (a terminal only): runs done of all, and
/// how many failed.
fn draw_progress(progress: &Progress) {
    const WIDTH: usize = 24;
    let filled = progress.done * WIDTH / progress.total.max(1);
    let bar: String = "█".repeat(filled) + &"░".repeat(WIDTH - filled);
    let mut stderr = std::io::stderr();
    let _ = write!(
        stderr,
        "\r\x1b[2K{bar} {}/{} runs",
        progress.done, progress.total
    );
    let _ = stderr.flush();
}

/// Reads an earlier report for --compare.
fn read_report(path: &std::path::Path) -> Result<Report, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(format!("cannot read the report {}: {e}", path.display())))?;
    Report::from_json(&text).map_err(|e| {
        Failure::usage(format!(
            "{} is not a report written by agentloop eval --report: {e}",
            path.display()
        ))
    })
}

fn write(path: &std::path::Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text)
        .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", path.display())))
}

/// The provider of each run: a scripted provider is made again from its
/// script for every run (a script is one conversation); any other is
/// shared.
fn source(flag: Option<&str>, shared: Arc<dyn ModelProvider>) -> Result<ProviderFactory, Failure> {
    let Some(path) = flag.and_then(|f| f.strip_prefix("scripted:")) else {
        return Ok(Arc::new(move || Arc::clone(&shared)));
    };
    let json = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(format!("cannot read the script {path}: {e}")))?;
    // Checked once here (`choose` did too): every later parse succeeds.
    agentloop_engine::scripted::ScriptedProvider::from_json(&json).map_err(|e| {
        Failure::usage(format!(
            "the script {path} is not a JSON array of turns: {e}"
        ))
    })?;
    Ok(Arc::new(
        move || match agentloop_engine::scripted::ScriptedProvider::from_json(&json) {
            Ok(provider) => provider as Arc<dyn ModelProvider>,
            Err(_) => Arc::clone(&shared),
        },
    ))
}

/// The judge: --judge-provider (else the agent's provider) and
/// --judge-model (else the agent's model when the provider is the same).
async fn judge(args: &EvalArgs, subject: &CliSubject) -> Result<Judge, Failure> {
    let Some(flag) = args.judge_provider.as_deref() else {
        return Ok(Judge::new(
            Arc::clone(&subject.provider),
            args.judge_model
                .clone()
                .unwrap_or_else(|| subject.agent.chosen.model.clone()),
        ));
    };
    let chosen = providers::choose(Some(flag), args.judge_model.as_deref(), None)
        .await
        .map_err(|e| Failure::usage(format!("--judge-provider: {e}")))?;
    let provider = source(Some(flag), chosen.provider)?;
    Ok(Judge::new(provider, chosen.model))
}

/// Stops a case's deadline timer when the run ends first.
struct Deadline(tokio::task::JoinHandle<()>);

impl Drop for Deadline {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The agent `run` builds, run on one case in its folder.
struct CliSubject {
    agent: Agent,
    provider: ProviderFactory,
    approvals: ApprovalPolicies,
    hooks: Hooks,
}

#[async_trait]
impl Subject for CliSubject {
    async fn run(&self, input: CaseInput<'_>) -> Result<LoopResult, SubjectError> {
        let provider = (self.provider)();
        let tools = self
            .agent
            .tools(Some(input.folder), Arc::clone(&provider))
            .map_err(|e| SubjectError(e.to_string()))?;
        let mut options = agentloop_eval::subject::case_options(&self.agent.options, input.case);
        options.approvals = self.approvals.clone();
        agentloop_engine::check_output_schema(self.agent.strategy.name(), &options)
            .map_err(|e| SubjectError(format!("output_schema: {e}")))?;
        let cancel = CancellationToken::new();
        let mut deps = RunDeps::new(provider)
            .with_tools(tools)
            .with_cancel(cancel.clone());
        deps.hooks = self.hooks.clone();
        // A case's wall-time limit also ends its run (cancelled), so a
        // run that hangs or runs away cannot hold the eval up.
        let _deadline = input
            .case
            .expect
            .max_seconds
            .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
            .map(|limit| {
                Deadline(tokio::spawn(async move {
                    tokio::time::sleep(limit).await;
                    cancel.cancel();
                }))
            });
        let mut events = self
            .agent
            .strategy
            .run(options.clone(), input.context, deps.clone());
        loop {
            let result = collect(events).await;
            let LoopStatus::Suspended {
                pending,
                state: Some(state),
            } = &result.status
            else {
                return Ok(result);
            };
            // No person is there: calls left to ask are rejected, and the
            // run goes on (as `run` does with no terminal).
            events = agentloop_engine::decide(
                options.clone(),
                state.as_ref().clone(),
                approve::without_person(pending),
                deps.clone(),
            )
            .map_err(|e| SubjectError(e.to_string()))?;
        }
    }
}
