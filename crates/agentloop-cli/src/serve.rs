//! `agentloop serve`, `agentloop users` and `agentloop complete-workflow`:
//! the HTTP server of `agentloop-server` and the commands that manage its
//! store directly.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use agentloop_server::config::{RateLimit, TrustedProxies, TrustedProxy};
use agentloop_server::listener::{ConnectionLimits, serve_bounded};
use agentloop_server::{AgentPrompts, Server, ServerConfig, shutdown_signal};
use agentloop_storage::model::now_millis;
use clap::Args;
use serde::Deserialize;

use crate::config::{RateSetting, ServeApprovals, ServeConfig, ServeEngine};
use crate::db::{self, Access};
use crate::logging::LogFormat;
use crate::out::{Failure, Outcome, Stdout};
use crate::serve_restate::RestateSettings;

#[derive(Args)]
pub struct ServeArgs {
    /// SQLite file, `:memory:`, or a PostgreSQL URL (postgres://…).
    /// Default: agentloop.db in the data folder, as for every subcommand.
    #[arg(long)]
    pub db: Option<String>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8787", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub bind: String,
    /// anthropic, openai-chat, openai-responses, openai-compatible,
    /// scripted:FILE (every agent run plays FILE from its start, as each
    /// case of `eval` does) or scripted-shared:FILE (one script for all
    /// runs, each turn to the run that asks next: a whole chain in one
    /// file). Default: from the keys in the environment; with none, the
    /// server starts and its runs fail saying how to configure a model.
    #[arg(long)]
    pub provider: Option<String>,
    /// Every run plays the shipped demo conversation (examples/demo.json):
    /// no key, no network.
    #[arg(long, conflicts_with = "provider")]
    pub demo: bool,
    /// Runs use the local model (llama.cpp's llama-server with SmolLM2, as
    /// `scripts/local-model.sh build` installed them): the server answering
    /// on 127.0.0.1:8089 ($AGENTLOOP_LOCAL_MODEL_PORT), else one started
    /// now and left running.
    #[arg(long, conflicts_with_all = ["demo", "provider", "base_url"])]
    pub local: bool,
    /// Offer agents the `minion` tool: a sub-agent on the same model, with
    /// no tools of its own, whose work shows nested in the conversation.
    #[arg(long)]
    pub minion: bool,
    /// Default model id (a project's `model` overrides it).
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible server.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Lease owner name of this instance (default: unique per process).
    #[arg(long)]
    pub instance_id: Option<String>,
    /// Lease length in milliseconds (at least 1).
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub lease_ms: u64,
    /// How many steps each agent run keeps, to list and fork it at: `all`,
    /// `none` (only its latest state) or a number of latest steps.
    #[arg(long, value_name = "all|none|N", default_value = "all")]
    pub keep_steps: agentloop_storage::StepRetention,
    /// Take no file checkpoints. By default, before each step that may
    /// write (fs writes, shell, javascript), a run's project folder is
    /// checkpointed beside the database, so a run can be rewound, or
    /// forked, with its files (`POST /api/agent-runs/{id}/rewind`).
    #[arg(long)]
    pub no_file_checkpoints: bool,
    /// Where file checkpoints are kept (default: beside the database,
    /// `FILE.checkpoints`, or `checkpoints` in the data folder for
    /// PostgreSQL). Keep it outside every project folder.
    #[arg(long, value_name = "DIR", conflicts_with = "no_file_checkpoints")]
    pub file_checkpoints: Option<PathBuf>,
    /// Lease renewal period in milliseconds, shorter than the lease.
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub heartbeat_ms: u64,
    /// How often to look for runs to take over, in milliseconds (at least 1).
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub claim_interval_ms: u64,
    /// Model turns per agent run (at least 1).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: u32,
    /// Agent runs per chain of a task (at least 1): implementation and
    /// review chain until an agent calls `complete_workflow`, a run fails
    /// or is cancelled, Mark Done, or this bound. A project's
    /// `chain_limits` overrides it and may add a token or cost budget.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub chain_max_runs: u32,
    /// The folder project folders are made in (a relative `repoFolder` is
    /// taken inside it; no project may use the folder itself, and no two
    /// projects nested or equal folders). Default: `projects` in the data
    /// folder (`$XDG_DATA_HOME/agentloop`). `/` lets projects use any
    /// folder of the machine.
    #[arg(long)]
    pub projects_root: Option<PathBuf>,
    /// Log line format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log filter when `RUST_LOG` is not set (`info`, `debug`,
    /// `agentloop_server=debug,warn`, ...). At `info` the log holds the
    /// start-up lines, runs' status changes, warnings and errors; one line
    /// per request is at `debug` (`info,agentloop_server::http=debug`).
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// Also serve Prometheus metrics at `http://ADDR/metrics`, on a
    /// listener of its own with no token (bind it where only your scraper
    /// reaches it).
    #[arg(long)]
    pub metrics_bind: Option<String>,
    /// Tokens each model call reserves at least against the budgets of
    /// its run's user, project and task before it is made (later calls
    /// of a run reserve as much as its largest call spent, if more).
    #[arg(long, default_value_t = 8_000)]
    pub budget_estimate_tokens: u64,
    /// US dollars each model call reserves at least against those
    /// budgets: set it near what one call of your model costs, so
    /// instances racing one budget overspend it by no more than calls
    /// spend beyond it.
    #[arg(long, default_value_t = 0.05, value_parser = non_negative_usd)]
    pub budget_estimate_usd: f64,
    /// Seconds a model call's budget hold may stay unsettled before the
    /// next reservation on its budgets releases it: an instance that
    /// stopped mid-call never settles its holds, and locks its budgets no
    /// longer than this. Keep it above your longest model call.
    #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..))]
    pub budget_hold_expiry_secs: u64,
    /// Seconds between the looks an open event stream or WebSocket takes
    /// at its token, to end once it is revoked or expires. On PostgreSQL
    /// a revocation is also announced to every instance, which ends the
    /// streams at once; on SQLite a revocation by another process (such
    /// as `agentloop users`) is seen at the next look.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub token_check_secs: u64,
    /// Let webhook deliveries reach loopback and private addresses (off by
    /// default, so a project's webhook cannot reach into this host's
    /// network).
    #[arg(long)]
    pub webhooks_allow_private: bool,
    /// Seconds one webhook delivery attempt waits for the receiver (at
    /// least 1).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub webhook_timeout: u64,
    /// Attempts per webhook delivery (at least 1); the wait between them
    /// starts at --webhook-retry-ms and doubles.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub webhook_attempts: u32,
    /// Milliseconds before a webhook delivery's second attempt (at least 1).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub webhook_retry_ms: u64,
    /// Let projects name MCP servers (`mcpServers`) that their runs start;
    /// stdio ones run as programs of this host, in the project folder, so
    /// allow it only where every user is trusted with that.
    #[arg(long)]
    pub allow_project_mcp: bool,
    /// Let projects enable the `shell` tool (`"shell": true`): their runs'
    /// commands run in this host's sandbox (Landlock, user, PID and network
    /// namespaces, seccomp; limits and read paths from the configuration
    /// file's `[shell]` table) inside the project folder. Linux only.
    #[arg(long)]
    pub allow_shell: bool,
    /// Connections served at once (at least 1); more wait to be accepted.
    #[arg(long, default_value_t = 512, value_parser = at_least_one)]
    pub max_connections: usize,
    /// Milliseconds a connection has to send a complete request head (new,
    /// or idle between requests) before it is closed (at least 1).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_ms: u64,
    /// Requests a second each client may keep up — a client is the user
    /// a valid token (or session cookie) names, else the peer address —
    /// past which it is answered 429 with `Retry-After`; a stream counts
    /// once, when it opens. `off` (or 0): no limit. Default: the
    /// configuration file's `[serve] rate_limit`, else 100.
    #[arg(long, value_name = "PER_SECOND|off")]
    pub rate_limit: Option<RateSetting>,
    /// Requests a client may send at once above the steady rate (at least
    /// 1). Default: `[serve] rate_burst`, else twice the rate.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_burst: Option<u32>,
    /// A reverse proxy (an address, or a network such as 10.0.0.0/8) whose
    /// `X-Forwarded-For` names the client: unauthenticated requests then
    /// count against that client's address rather than the proxy's.
    /// Repeat for several. Default: `[serve] trusted_proxies`, else none
    /// (the header is ignored: any client could write it).
    #[arg(long = "trust-proxy", value_name = "ADDRESS[/LEN]")]
    pub trust_proxy: Vec<TrustedProxy>,
    /// Whether projects' file changes, JavaScript calls and shell commands
    /// wait for a person: `unattended` (the default: they run without
    /// asking, the fs tool jailed to the project folder, JavaScript and
    /// shell sandboxed) or `ask`. A project's own `approvals` setting wins. Default: the
    /// configuration file's `[serve] approvals`, else `unattended`.
    #[arg(long, value_enum)]
    pub approvals: Option<ServeApprovals>,
    /// JSON file overriding agent prompts:
    /// `{"planification": "...", "implementation": "...", "review": "..."}`
    /// (`{task_doc_path}` and `{task_id}` are replaced).
    #[arg(long)]
    pub prompts: Option<PathBuf>,
    /// How agent runs execute: `builtin` (this instance's leases; the
    /// default) or `restate` (durable Restate workflows: needs
    /// `--restate-ingress` and `--restate-admin`). Default: the
    /// configuration file's `[serve] engine`, else `builtin`.
    #[arg(long, value_enum)]
    pub engine: Option<ServeEngine>,
    /// Restate's ingress URL (`http://…`; `[serve] restate_ingress`).
    #[arg(long)]
    pub restate_ingress: Option<String>,
    /// Restate's admin API URL (`http://…`; `[serve] restate_admin`).
    #[arg(long)]
    pub restate_admin: Option<String>,
    /// Address the Restate service endpoint of this process listens on
    /// (`[serve] restate_bind`; default 127.0.0.1:9080).
    #[arg(long)]
    pub restate_bind: Option<String>,
    /// URL Restate reaches that endpoint at, when not `http://` and the
    /// bound address (`[serve] restate_endpoint_url`).
    #[arg(long)]
    pub restate_endpoint_url: Option<String>,
    /// How Restate reaches that endpoint: `http2` (the default; one
    /// connection for every run) or `http1` (one request per step, for
    /// several workers behind a balancer that spreads connections;
    /// `[serve] restate_protocol`).
    #[arg(long, value_enum)]
    pub restate_protocol: Option<crate::config::RestateProtocol>,
}

#[derive(Args)]
pub struct DbArgs {
    /// SQLite file, `:memory:`, or a PostgreSQL URL (default: agentloop.db
    /// in the data folder).
    #[arg(long)]
    pub db: Option<String>,
}

#[derive(Args)]
pub struct CompleteWorkflowArgs {
    /// The task.
    #[arg(value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub task_id: String,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Deserialize)]
struct PromptOverrides {
    planification: Option<String>,
    implementation: Option<String>,
    review: Option<String>,
}

fn prompts(path: Option<&PathBuf>) -> Result<AgentPrompts, String> {
    let mut prompts = AgentPrompts::default();
    let Some(path) = path else {
        return Ok(prompts);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let overrides: PromptOverrides = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a prompts object: {e}", path.display()))?;
    if let Some(p) = overrides.planification {
        prompts.planification = p;
    }
    if let Some(p) = overrides.implementation {
        prompts.implementation = p;
    }
    if let Some(p) = overrides.review {
        prompts.review = p;
    }
    Ok(prompts)
}

/// A count of at least one (`--max-connections`).
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("0 is not allowed: at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e}: a whole number, at least 1")),
    }
}

/// Checks what one flag alone cannot: the lease outlives its renewal.
pub fn check(args: &ServeArgs) -> Result<(), Failure> {
    if args.heartbeat_ms >= args.lease_ms {
        return Err(Failure::usage(format!(
            "--heartbeat-ms {} must be shorter than --lease-ms {}, or leases run out \
             between renewals",
            args.heartbeat_ms, args.lease_ms
        )));
    }
    Ok(())
}

/// Runs the server until SIGTERM or Ctrl-C. What the operator can fix
/// before it starts (an address that is none, a port taken, a database
/// folder missing) is a usage error.
pub fn serve(args: ServeArgs) -> Result<ExitCode, Failure> {
    let _telemetry = crate::logging::init(args.log_format, &args.log_level, false, None)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async move {
        let mut args = args;
        if args.local {
            // The agents bring their own prompts and limits: the defaults
            // a command's flags would take are not used.
            let mut unused_cap = None;
            crate::local_model::setup(crate::local_model::Flags {
                model_flag: args.model.is_some(),
                provider: &mut args.provider,
                base_url: &mut args.base_url,
                model: &mut args.model,
                system: None,
                max_tokens: &mut unused_cap,
                tools: &[],
            })
            .await
            .map_err(|e| e.to_string())?;
        }
        let local = args.local;
        let configured = args.provider.is_some()
            || args.base_url.is_some()
            || crate::providers::configured_in_env();
        let chosen = if args.demo {
            eprintln!("agentloop: {}", crate::demo::SERVE_NOTICE);
            crate::demo::provider(args.model.as_deref())
        } else if configured {
            choose_for_runs(&args).await
        } else {
            eprintln!("agentloop: {}", crate::providers::SERVE_NO_KEY);
            Ok(crate::providers::unconfigured(args.model.as_deref()))
        }
        .map_err(|e| e.to_string())?;
        let chosen = if local {
            crate::providers::Chosen {
                provider: crate::local_model::guarded(chosen.provider),
                ..chosen
            }
        } else {
            chosen
        };
        let store = db::open_for_write(args.db.as_deref()).await?;
        let minion = args.minion.then(|| {
            let options = agentloop_types::LoopOptions {
                request: agentloop_types::RequestOptions {
                    model: chosen.model.clone(),
                    ..Default::default()
                },
                ..Default::default()
            };
            std::sync::Arc::new(
                agentloop_tools::MinionTool::new(chosen.provider.clone(), Vec::new())
                    .with_options(options),
            ) as std::sync::Arc<dyn agentloop_types::Tool>
        });
        let mut config = ServerConfig::new(chosen.provider, chosen.model);
        config.extra_tools.extend(minion);
        config.prompts = prompts(args.prompts.as_ref())?;
        config.max_iterations = args.max_iterations;
        config.chain_max_runs = args.chain_max_runs;
        config.budget_estimate = agentloop_types::Spend {
            tokens: args.budget_estimate_tokens,
            cost: args.budget_estimate_usd,
        };
        config.budget_hold_expiry = Duration::from_secs(args.budget_hold_expiry_secs);
        config.token_check = Duration::from_secs(args.token_check_secs);
        let projects_root = match args.projects_root.clone() {
            Some(root) => root,
            None => db::data_dir()?.join("projects"),
        };
        std::fs::create_dir_all(&projects_root).map_err(|e| {
            format!(
                "cannot create the projects folder {}: {e}",
                projects_root.display()
            )
        })?;
        config.projects_root = Some(projects_root.clone());
        config.allow_project_mcp = args.allow_project_mcp;
        config.webhooks = agentloop_server::config::WebhookSettings {
            allow_private: args.webhooks_allow_private,
            timeout: std::time::Duration::from_secs(args.webhook_timeout),
            attempts: args.webhook_attempts,
            retry_base: std::time::Duration::from_millis(args.webhook_retry_ms),
        };
        if args.allow_shell {
            config.shell_tool = Some(crate::tools::shell_factory().map_err(|e| e.to_string())?);
        }
        let serve_config = crate::config::load().map_err(|e| e.to_string())?.serve;
        let approvals = args
            .approvals
            .or(serve_config.approvals)
            .unwrap_or(ServeApprovals::Unattended);
        let restate = restate_settings(&args, &serve_config)?;
        config.approvals = approvals.into();
        config.connections = ConnectionLimits {
            max_connections: args.max_connections.max(1),
            header_timeout: Duration::from_millis(args.header_timeout_ms.max(1)),
        };
        config.rate_limit = rate_limit(&args, &serve_config);
        config.trusted_proxies = if args.trust_proxy.is_empty() {
            TrustedProxies::new(serve_config.trusted_proxies.clone().unwrap_or_default())
        } else {
            TrustedProxies::new(args.trust_proxy.iter().copied())
        };
        config.lease_ttl = Duration::from_millis(args.lease_ms.max(1));
        config.keep_steps = args.keep_steps;
        if !args.no_file_checkpoints {
            let dir = match &args.file_checkpoints {
                Some(dir) => dir.clone(),
                None => crate::file_checkpoints::store_dir(args.db.as_deref())?,
            };
            config.file_checkpoints = Some(std::sync::Arc::new(crate::file_checkpoints::open_dir(
                &dir,
            )?));
        }
        config.heartbeat = Duration::from_millis(args.heartbeat_ms.max(1));
        config.claim_interval = Duration::from_millis(args.claim_interval_ms.max(1));
        if let Some(id) = args.instance_id {
            config.instance_id = id;
        }
        let listener = listen(&args.bind).await?;
        let address = listener
            .local_addr()
            .map_err(|e| format!("cannot read the bound address: {e}"))?;
        eprintln!(
            "agentloop: serving on http://{address} (store: {}, projects in {}, approvals: {}, \
             rate limit: {}{})",
            db::describe(args.db.as_deref()),
            projects_root.display(),
            config.approvals.as_str(),
            describe_rate(config.rate_limit),
            describe_proxies(&config.trusted_proxies)
        );
        let restate_client = match &restate {
            Some(settings) => {
                let (client, dispatch) = crate::serve_restate::dispatcher(settings)?;
                config.dispatch = Some(dispatch);
                Some((settings, client))
            }
            None => None,
        };
        let server = Server::new(store, config);
        if let Some(bind) = &args.metrics_bind {
            let metrics = tokio::net::TcpListener::bind(bind)
                .await
                .map_err(|e| format!("cannot listen on {bind} for metrics: {e}"))?;
            let address = metrics
                .local_addr()
                .map_err(|e| format!("cannot read the bound address: {e}"))?;
            eprintln!("agentloop: metrics on http://{address}/metrics");
            tokio::spawn(serve_bounded(
                metrics,
                agentloop_server::metrics::router(server.state.clone()),
                ConnectionLimits::default(),
                server.state.shutdown.clone(),
            ));
        }
        match &restate_client {
            Some((settings, client)) => {
                crate::serve_restate::serve_registering(server, listener, settings, client).await?
            }
            None => server
                .serve(listener, shutdown_signal())
                .await
                .map_err(|e| e.to_string())?,
        }
        eprintln!("agentloop: stopped");
        Ok(ExitCode::SUCCESS)
    })
}

/// The listener on `bind`; an address that is none or a port in use is a
/// usage error naming what to change.
async fn listen(bind: &str) -> Result<tokio::net::TcpListener, Failure> {
    if bind.parse::<std::net::SocketAddr>().is_err() && !bind.contains(':') {
        return Err(Failure::usage(format!(
            "--bind {:?} is not an address to listen on: give HOST:PORT, e.g. 127.0.0.1:8787 \
             (or 0.0.0.0:8787 for every interface)",
            crate::out::sanitize(bind)
        )));
    }
    tokio::net::TcpListener::bind(bind).await.map_err(|e| {
        let fix = match e.kind() {
            std::io::ErrorKind::AddrInUse => {
                "another program listens there: pick another port with --bind (127.0.0.1:0 \
                 takes any free one), or stop the other program"
            }
            std::io::ErrorKind::AddrNotAvailable => {
                "it is not an address of this machine: bind 127.0.0.1:PORT, 0.0.0.0:PORT or \
                 one of its own addresses"
            }
            std::io::ErrorKind::PermissionDenied => {
                "this process may not use that port (ports below 1024 need privileges): pick \
                 one of 1024 or more"
            }
            _ => "give HOST:PORT, e.g. 127.0.0.1:8787",
        };
        Failure::usage(format!(
            "cannot listen on {} ({e}): {fix}",
            crate::out::sanitize(bind)
        ))
    })
}

/// The model the runs call: `scripted:FILE` plays FILE from its start in
/// every run, `scripted-shared:FILE` once across all runs in the order
/// they ask; any other provider as `run` chooses it.
async fn choose_for_runs(args: &ServeArgs) -> Result<crate::providers::Chosen, Failure> {
    let provider = args.provider.as_deref();
    let shared = provider
        .and_then(|p| p.strip_prefix("scripted-shared:"))
        .map(|path| format!("scripted:{path}"));
    let mut chosen = crate::providers::choose(
        shared.as_deref().or(provider),
        args.model.as_deref(),
        args.base_url.as_deref(),
    )
    .await?;
    if let Some(path) = provider.and_then(|p| p.strip_prefix("scripted:")) {
        chosen.provider = crate::scripted_runs::ScriptPerRun::read(path)?;
    }
    Ok(chosen)
}

/// The per-client rate (flags over the configuration file over the
/// server's default); the burst defaults to twice the rate.
fn rate_limit(args: &ServeArgs, config: &ServeConfig) -> Option<RateLimit> {
    let per_second = match args.rate_limit.or(config.rate_limit) {
        Some(RateSetting::Off) => return None,
        Some(RateSetting::PerSecond(n)) => n,
        None => RateLimit::default().per_second,
    };
    let burst = args
        .rate_burst
        .and_then(NonZeroU32::new)
        .or(config.rate_burst)
        .unwrap_or_else(|| {
            NonZeroU32::new(per_second.get().saturating_mul(2)).unwrap_or(per_second)
        });
    Some(RateLimit { per_second, burst })
}

/// The trusted proxies as the start-up line lists them; nothing when none.
fn describe_proxies(proxies: &TrustedProxies) -> String {
    if proxies.is_empty() {
        return String::new();
    }
    let listed: Vec<String> = proxies.iter().map(ToString::to_string).collect();
    format!(", clients named by proxies: {}", listed.join(", "))
}

fn describe_rate(limit: Option<RateLimit>) -> String {
    match limit {
        Some(limit) => format!(
            "{}/s per client, bursts of {}",
            limit.per_second, limit.burst
        ),
        None => "off".to_owned(),
    }
}

/// The Restate settings of `--engine restate` (flags over the
/// configuration file), `None` for the built-in engine.
fn restate_settings(
    args: &ServeArgs,
    config: &ServeConfig,
) -> Result<Option<RestateSettings>, String> {
    let engine = args
        .engine
        .or(config.engine)
        .unwrap_or(ServeEngine::Builtin);
    if engine == ServeEngine::Builtin {
        return Ok(None);
    }
    let pick = |flag: &Option<String>, file: &Option<String>| flag.clone().or_else(|| file.clone());
    let missing = |what: &str| {
        format!(
            "--engine restate needs --{what} (or `[serve] {}` in the configuration file)",
            what.replace('-', "_")
        )
    };
    Ok(Some(RestateSettings {
        ingress: pick(&args.restate_ingress, &config.restate_ingress)
            .ok_or_else(|| missing("restate-ingress"))?,
        admin: pick(&args.restate_admin, &config.restate_admin)
            .ok_or_else(|| missing("restate-admin"))?,
        bind: pick(&args.restate_bind, &config.restate_bind)
            .unwrap_or_else(|| "127.0.0.1:9080".to_owned()),
        endpoint_url: pick(&args.restate_endpoint_url, &config.restate_endpoint_url),
        protocol: match args.restate_protocol.or(config.restate_protocol) {
            Some(crate::config::RestateProtocol::Http1) => agentloop_restate::Protocol::Http1,
            Some(crate::config::RestateProtocol::Http2) | None => {
                agentloop_restate::Protocol::Http2
            }
        },
    }))
}

/// `agentloop complete-workflow TASK`: sets the task's `workflow_complete`
/// and force-completes its running or waiting agent runs (they end
/// `completed`, stopped by `workflow_complete`), so its chain stops.
pub async fn complete_workflow(args: CompleteWorkflowArgs) -> Outcome {
    let store = db::open(args.db.db.as_deref(), Access::Read)
        .await?
        .ok_or_else(|| {
            Failure::Runtime(format!(
                "no task {} in {}",
                args.task_id,
                db::describe(args.db.db.as_deref())
            ))
        })?;
    let completed = store
        .set_workflow_complete(&args.task_id, true, now_millis())
        .await
        .map_err(|e| e.to_string())?;
    Stdout::new().line(format!(
        "task {}: workflow complete ({} stopped)",
        args.task_id,
        crate::out::counted(
            completed.len() as u64,
            "running agent run",
            "running agent runs"
        )
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// Parses an amount of US dollars: a finite number of at least 0.
fn non_negative_usd(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd >= 0.0 => Ok(usd),
        _ => Err(format!(
            "{text:?} is not an amount of US dollars of at least 0"
        )),
    }
}
