//! `agentloop schedules`: the server's schedules, written to its database
//! the way `agentloop users` writes accounts (no server need be running;
//! a running one sees a change within its scheduler's poll, five
//! seconds). Create a schedule of a task (its id printed), list them,
//! pause, resume or delete one. Each change is in the audit log, made by
//! the operator.

use std::process::ExitCode;

use agentloop_server::runner::project_owner;
use agentloop_server::schedule_time::{DEFAULT_TIME_ZONE, first_tick};
use agentloop_storage::model::{AgentType, now_millis};
use agentloop_storage::schedules::Schedule;
use agentloop_storage::time::rfc3339;
use agentloop_storage::{StorageError, Store};
use clap::{Args, Subcommand};

use crate::db::{self, Access};
use crate::out::{Failure, Outcome, Stdout, sanitize};
use crate::serve::DbArgs;

#[derive(Subcommand)]
pub enum SchedulesCommand {
    /// Create a schedule that starts an agent run on a task at each tick
    /// of a cron expression, and print its id.
    Create(CreateArgs),
    /// List schedules: id, task, cron, zone, state, next tick, last
    /// outcome.
    List(ListArgs),
    /// Pause a schedule: no tick fires until it is resumed.
    Pause(ScheduleArgs),
    /// Resume a schedule from now (ticks that fell while it was paused do
    /// not fire).
    Resume(ScheduleArgs),
    /// Delete a schedule (runs it started go on).
    Delete(ScheduleArgs),
}

#[derive(Args)]
pub struct CreateArgs {
    /// The task whose agent runs it starts.
    #[arg(long)]
    pub task: String,
    /// A cron expression: five fields (minute hour day-of-month month
    /// day-of-week, e.g. "0 9 * * MON-FRI") or six with seconds first
    /// ("*/30 * * * * *").
    #[arg(long)]
    pub cron: String,
    /// The IANA time zone the expression is read in.
    #[arg(long = "tz", default_value = DEFAULT_TIME_ZONE)]
    pub time_zone: String,
    /// The agent it starts: planification, implementation or review.
    #[arg(long, default_value = "implementation", value_parser = parse_agent)]
    pub agent: AgentType,
    /// The request each run is given.
    #[arg(long)]
    pub prompt: Option<String>,
    /// Create it paused.
    #[arg(long)]
    pub paused: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args)]
pub struct ListArgs {
    /// Only this project's.
    #[arg(long)]
    pub project: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args)]
pub struct ScheduleArgs {
    /// The schedule's id.
    pub id: String,
    #[command(flatten)]
    pub db: DbArgs,
}

fn parse_agent(text: &str) -> Result<AgentType, String> {
    AgentType::parse(text.trim())
        .ok_or_else(|| "one of planification, implementation, review".to_owned())
}

/// A failure of the store, for the terminal.
fn failed(error: StorageError) -> Failure {
    match error {
        StorageError::Invalid(reason) => Failure::usage(reason),
        other => Failure::Runtime(other.to_string()),
    }
}

/// The schedule with that id; a usage error naming it when there is none.
async fn stored(store: &dyn Store, id: &str) -> Result<Schedule, Failure> {
    store.get_schedule(id).await.map_err(|e| match e {
        StorageError::NotFound { .. } => Failure::usage(format!(
            "no schedule {:?} (`agentloop schedules list` shows them)",
            sanitize(id)
        )),
        other => failed(other),
    })
}

/// Records a change the operator made here in the audit log.
async fn audit(store: &dyn Store, action: &str, schedule: &Schedule) -> Result<(), Failure> {
    agentloop_server::audit::record(
        store,
        agentloop_server::audit::Action {
            action: action.to_owned(),
            project_id: Some(schedule.project_id.clone()),
            target: Some(schedule.id.clone()),
            detail: serde_json::json!({
                "task_id": schedule.task_id,
                "by": "agentloop schedules",
            }),
            ..Default::default()
        },
    )
    .await
    .map(drop)
    .map_err(|e| Failure::Runtime(format!("the audit log could not be written: {e}")))
}

/// One line of `list`.
fn line(s: &Schedule) -> String {
    let state = if s.paused { "paused" } else { "active" };
    let next = if s.paused || s.next_fire_at == i64::MAX {
        "-".to_owned()
    } else {
        rfc3339(s.next_fire_at)
    };
    let last = s.last_outcome.as_ref().map_or_else(
        || "-".to_owned(),
        |o| {
            let what = o
                .agent_run_id
                .as_deref()
                .or(o.reason.as_deref())
                .unwrap_or("");
            format!(
                "{} {} {}",
                rfc3339(o.tick_at),
                o.kind.as_str(),
                sanitize(what)
            )
        },
    );
    format!(
        "{}\t{}\t{}\t{}\t{state}\tnext {next}\tlast {last}",
        s.id,
        s.task_id,
        sanitize(&s.cron),
        sanitize(&s.time_zone)
    )
}

/// Pauses or resumes a schedule; resuming moves it to its first tick
/// after now.
async fn set_paused(args: ScheduleArgs, paused: bool) -> Outcome {
    let store = db::open_for_write(args.db.db.as_deref()).await?;
    let mut schedule = stored(&*store, &args.id).await?;
    let now = now_millis();
    schedule.paused = paused;
    schedule.next_fire_at = first_tick(&schedule.cron, &schedule.time_zone, now)
        .map_err(|e| Failure::usage(e.to_string()))?;
    schedule.updated_at = now;
    store.update_schedule(&schedule).await.map_err(failed)?;
    let action = if paused {
        "schedule.pause"
    } else {
        "schedule.resume"
    };
    audit(&*store, action, &schedule).await?;
    Stdout::new().line(line(&schedule))?;
    Ok(ExitCode::SUCCESS)
}

/// `agentloop schedules create|list|pause|resume|delete`.
pub async fn schedules(command: SchedulesCommand) -> Outcome {
    match command {
        SchedulesCommand::Create(args) => create(args).await,
        SchedulesCommand::List(args) => list(args).await,
        SchedulesCommand::Pause(args) => set_paused(args, true).await,
        SchedulesCommand::Resume(args) => set_paused(args, false).await,
        SchedulesCommand::Delete(args) => {
            let store = db::open_for_write(args.db.db.as_deref()).await?;
            let schedule = stored(&*store, &args.id).await?;
            store.delete_schedule(&schedule.id).await.map_err(failed)?;
            audit(&*store, "schedule.delete", &schedule).await?;
            Stdout::new().line(format!("schedule {} deleted", schedule.id))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn create(args: CreateArgs) -> Outcome {
    let store = db::open_for_write(args.db.db.as_deref()).await?;
    let task = store
        .get_task(args.task.trim())
        .await
        .map_err(|e| match e {
            StorageError::NotFound { .. } => {
                Failure::usage(format!("no task {:?}", sanitize(args.task.trim())))
            }
            other => failed(other),
        })?;
    let project = store.get_project(&task.project_id).await.map_err(failed)?;
    let owner = project_owner(&project)
        .ok_or_else(|| {
            Failure::usage(format!(
                "task {} belongs to project {}, which has no owner: it is not a server's",
                task.id, project.id
            ))
        })?
        .to_owned();
    let now = now_millis();
    let cron = args.cron.trim().to_owned();
    let time_zone = args.time_zone.trim().to_owned();
    let next_fire_at =
        first_tick(&cron, &time_zone, now).map_err(|e| Failure::usage(e.to_string()))?;
    let schedule = Schedule {
        id: agentloop_server::ids::new_id(),
        project_id: project.id,
        task_id: task.id,
        cron,
        time_zone,
        agent: args.agent,
        prompt: args.prompt.filter(|p| !p.trim().is_empty()),
        paused: args.paused,
        next_fire_at,
        last_fired_at: None,
        last_outcome: None,
        created_by: owner,
        created_at: now,
        updated_at: now,
    };
    store.create_schedule(&schedule).await.map_err(failed)?;
    audit(&*store, "schedule.create", &schedule).await?;
    crate::out::note(format!(
        "created schedule {} of task {}; next tick {}",
        schedule.id,
        schedule.task_id,
        if schedule.paused {
            "- (paused)".to_owned()
        } else {
            rfc3339(schedule.next_fire_at)
        }
    ));
    Stdout::new().line(&schedule.id)?;
    Ok(ExitCode::SUCCESS)
}

async fn list(args: ListArgs) -> Outcome {
    let Some(store) = db::open(args.db.db.as_deref(), Access::Read).await? else {
        return Ok(ExitCode::SUCCESS);
    };
    let projects = match args.project {
        Some(id) => vec![id],
        None => store
            .list_projects()
            .await
            .map_err(failed)?
            .into_iter()
            .map(|p| p.id)
            .collect(),
    };
    let mut out = Stdout::new();
    for project in projects {
        for schedule in store.list_schedules(&project).await.map_err(failed)? {
            out.line(line(&schedule))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
