//! `agentloop runs list|show|fork|rewind|diff`: the runs of a database's
//! chats, the steps each keeps, forks of a run at one of its steps, and
//! the project folder as it was at a step (see [`crate::file_checkpoints`]).

mod files;
mod stored;

use std::path::PathBuf;
use std::process::ExitCode;

use agentloop_runtime::RuntimeError;
use agentloop_runtime::fork::fork_chat_run;
use agentloop_storage::model::{Chat, RunRecord, RunStatus};
use agentloop_storage::{RunStep, StepRetention};
use agentloop_types::RunPhase;
use clap::{Args, Subcommand};

use crate::chats::when;
use crate::db;
use crate::out::{Failure, Outcome, Stdout};
use stored::{existing, existing_run};

/// The environment variable setting how many steps each run of a chat
/// keeps: `all` (the default), `none` or a number of latest steps.
pub const KEEP_STEPS_ENV: &str = "AGENTLOOP_KEEP_STEPS";

#[derive(Subcommand)]
pub enum RunsCommand {
    /// List a chat's runs (or every chat's), oldest first: id, chat,
    /// status, start time and steps kept.
    List(ListArgs),
    /// Show a run: its chat, status and times; with --steps, each step it
    /// keeps (seq, time, tokens and tool calls).
    Show(ShowArgs),
    /// Fork a run at one of its steps: a new run in a new chat whose
    /// history is the run's up to that step (the run itself is left as it
    /// is). Continue it with `agentloop chat --chat CHAT`.
    Fork(ForkArgs),
    /// Put the project folder back as it was at one of a run's steps, from
    /// the file checkpoints `chat` took: files the run (its fs, shell and
    /// javascript calls alike) created are removed, and what it changed or
    /// deleted comes back. What .gitignore ignores, and .git, are left
    /// alone. The conversation is left as it is: `runs fork --at SEQ
    /// --restore-files` goes on from the step with its files.
    Rewind(files::RewindArgs),
    /// Show what a run changed in the project folder from one of its steps
    /// to another (or to the folder as it is now), as a patch.
    Diff(files::DiffArgs),
}

#[derive(Args)]
pub struct ListArgs {
    /// Only this chat's runs.
    #[arg(long)]
    pub chat: Option<String>,
    /// Database (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ShowArgs {
    /// The run.
    pub id: String,
    /// List the steps the run keeps.
    #[arg(long)]
    pub steps: bool,
    /// Database (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ForkArgs {
    /// The run to fork.
    pub id: String,
    /// The seq of the step to fork at (`runs show RUN --steps` lists
    /// them).
    #[arg(long, value_name = "SEQ")]
    pub at: u64,
    /// A message of yours the fork takes before it goes on.
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,
    /// Also put the project folder back as it was at the step (as `runs
    /// rewind` does).
    #[arg(long)]
    pub restore_files: bool,
    /// With --restore-files: the folder to restore into (default: the
    /// folder the run worked in).
    #[arg(long, requires = "restore_files")]
    pub root: Option<PathBuf>,
    /// Database (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// How many steps runs keep, from [`KEEP_STEPS_ENV`].
pub fn step_retention() -> Result<StepRetention, Failure> {
    match std::env::var(KEEP_STEPS_ENV) {
        Ok(text) => text
            .parse()
            .map_err(|e| Failure::usage(format!("{KEEP_STEPS_ENV}: {e}"))),
        Err(_) => Ok(StepRetention::default()),
    }
}

pub async fn runs(command: RunsCommand) -> Outcome {
    match command {
        RunsCommand::List(args) => list(args).await,
        RunsCommand::Show(args) => show(args).await,
        RunsCommand::Fork(args) => fork(args).await,
        RunsCommand::Rewind(args) => files::rewind(args).await,
        RunsCommand::Diff(args) => files::diff(args).await,
    }
}

async fn list(args: ListArgs) -> Outcome {
    let mut out = Stdout::new();
    let store = existing(args.db.as_deref()).await?;
    let chats: Vec<Chat> = match &args.chat {
        Some(id) => vec![store.get_chat(id).await.map_err(|e| e.to_string())?],
        None => {
            let mut chats = Vec::new();
            for project in store.list_projects().await.map_err(|e| e.to_string())? {
                chats.extend(
                    store
                        .list_chats(&project.id)
                        .await
                        .map_err(|e| e.to_string())?,
                );
            }
            chats
        }
    };
    let mut rows = Vec::new();
    for chat in chats {
        for run in store.list_runs(&chat.id).await.map_err(|e| e.to_string())? {
            let steps = store.list_steps(&run.id).await.map_err(|e| e.to_string())?;
            rows.push((run, steps.len()));
        }
    }
    rows.sort_by(|(a, _), (b, _)| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    if args.json {
        let value: Vec<_> = rows
            .iter()
            .map(|(run, steps)| {
                serde_json::json!({
                    "id": run.id, "chat_id": run.chat_id, "status": run.status,
                    "created_at": run.created_at, "updated_at": run.updated_at,
                    "steps": steps,
                })
            })
            .collect();
        out.line(serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for (run, steps) in rows {
        out.line(format!(
            "{}\t{}\t{}\t{}\t{}",
            run.id,
            run.chat_id.as_deref().unwrap_or("-"),
            run.status.as_str(),
            when(run.created_at),
            crate::out::counted(steps as u64, "step", "steps"),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What comes after a step, in a word.
fn next_of(phase: &RunPhase) -> &'static str {
    match phase {
        RunPhase::CallModel => "model",
        RunPhase::RunTools { .. } => "tools",
        RunPhase::Finished => "end",
    }
}

/// A step as a JSON row; `took` is its duration (see [`durations`]).
fn step_json(step: &RunStep, took: Option<i64>) -> serde_json::Value {
    serde_json::json!({
        "seq": step.seq,
        "at": step.created_at,
        "duration_ms": took,
        "messages": step.message_count,
        "tokens": step.tokens(),
        "tool_calls": step.state.tool_calls,
        "model_turns": step.state.iteration,
        "next": next_of(&step.state.phase),
    })
}

/// How long each of `run`'s kept `steps` took: the time to the next step,
/// or for the last, to the run's last write once it has ended (`None`
/// while it goes on). A model step's is its call's latency; a tool step's,
/// its calls' wall time together.
fn durations(run: &RunRecord, steps: &[RunStep]) -> Vec<Option<i64>> {
    let ended = !matches!(
        run.status,
        RunStatus::Pending | RunStatus::Running | RunStatus::Suspended
    );
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let end = match steps.get(i + 1) {
                Some(next) => Some(next.created_at),
                None => ended.then_some(run.updated_at),
            };
            end.map(|end| end - step.created_at).filter(|ms| *ms >= 0)
        })
        .collect()
}

async fn show(args: ShowArgs) -> Outcome {
    let mut out = Stdout::new();
    let store = existing(args.db.as_deref()).await?;
    let run = existing_run(&*store, &args.id, args.db.as_deref()).await?;
    let steps = if args.steps {
        store.list_steps(&run.id).await.map_err(|e| e.to_string())?
    } else {
        Vec::new()
    };
    if args.json {
        let mut value = serde_json::json!({
            "id": run.id, "chat_id": run.chat_id, "status": run.status,
            "created_at": run.created_at, "updated_at": run.updated_at,
            "end_reason": run.end_reason,
        });
        if args.steps {
            let took = durations(&run, &steps);
            value["steps"] = steps
                .iter()
                .zip(took)
                .map(|(step, took)| step_json(step, took))
                .collect();
        }
        out.line(serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?)?;
        return Ok(ExitCode::SUCCESS);
    }
    out.line(format!(
        "run {} in chat {} ({}, started {}, last written {})",
        run.id,
        run.chat_id.as_deref().unwrap_or("-"),
        run.status.as_str(),
        when(run.created_at),
        when(run.updated_at),
    ))?;
    if !args.steps {
        return Ok(ExitCode::SUCCESS);
    }
    if steps.is_empty() {
        out.line("no steps kept")?;
        return Ok(ExitCode::SUCCESS);
    }
    out.line("seq\ttime\ttook\ttokens in/out\ttool calls\tnext")?;
    let mut before: Option<&RunStep> = None;
    for (step, took) in steps.iter().zip(durations(&run, &steps)) {
        let tokens = step.tokens();
        let (input, output, calls) = match before {
            Some(b) => (
                tokens.input_tokens.saturating_sub(b.tokens().input_tokens),
                tokens
                    .output_tokens
                    .saturating_sub(b.tokens().output_tokens),
                step.state.tool_calls.saturating_sub(b.state.tool_calls),
            ),
            None => (
                tokens.input_tokens,
                tokens.output_tokens,
                step.state.tool_calls,
            ),
        };
        let took = took.map_or_else(|| "-".to_owned(), |ms| format!("{:.2} s", ms as f64 / 1e3));
        out.line(format!(
            "{}\t{}\t{took}\t+{input}/+{output} ({}/{})\t+{calls} ({})\t{}",
            step.seq,
            agentloop_storage::time::rfc3339(step.created_at),
            tokens.input_tokens,
            tokens.output_tokens,
            step.state.tool_calls,
            next_of(&step.state.phase),
        ))?;
        before = Some(step);
    }
    Ok(ExitCode::SUCCESS)
}

async fn fork(args: ForkArgs) -> Outcome {
    let store = db::open_for_write(args.db.as_deref()).await?;
    let run = existing_run(&*store, &args.id, args.db.as_deref()).await?;
    if args.restore_files {
        files::not_running(&run)?;
    }
    // Forking reads and writes the store only: no model is called.
    let forked = match fork_chat_run(&*store, &args.id, args.at, args.prompt.as_deref()).await {
        Ok(forked) => forked,
        Err(e @ (RuntimeError::NotAStep { .. } | RuntimeError::ForkPrompt { .. })) => {
            return Err(Failure::usage(e.to_string()));
        }
        Err(e) => return Err(Failure::Runtime(e.to_string())),
    };
    let mut out = Stdout::new();
    if args.json {
        out.line(serde_json::to_string_pretty(&forked).map_err(|e| e.to_string())?)?;
    } else {
        out.line(format!("{}\t{}", forked.run_id, forked.chat_id))?;
        crate::out::note(format!(
            "forked run {} at seq {} as run {} in chat {}; continue it with `agentloop chat --chat {}`",
            forked.from, forked.at, forked.run_id, forked.chat_id, forked.chat_id
        ));
    }
    if args.restore_files {
        let restored = files::restore_at(
            &*store,
            &args.id,
            args.at,
            args.root.as_deref(),
            args.db.as_deref(),
        )
        .await?;
        if !args.json {
            files::tell_restored(&mut out, &args.id, args.at, restored.as_ref())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
