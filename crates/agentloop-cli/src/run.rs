//! `agentloop run`: one prompt through a loop strategy, drawn by
//! [`render::View`] (or printed as JSON event lines with `--json`), with a
//! spinner on a terminal's stderr while the model or a tool works. With no
//! provider configured it plays the shipped demo ([`crate::demo`]); a
//! question asked then gets no answer, and the run says what to do next:
//! on a terminal it exits 0, for a script (stdout not a terminal) 2, so
//! the demo is never taken for an answer. The prompt comes from the argument and piped stdin
//! ([`crate::prompt`]). Ctrl-C cancels the run; the exit code follows its
//! status ([`exit_code`]).

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;
use std::time::Instant;

use agentloop_engine::RunDeps;
use agentloop_engine::skills::prepare;
use agentloop_mcp::McpConfig;
use agentloop_types::{
    ApprovalPolicies, CancellationToken, EventKind, Hooks, LoopStatus, Message,
    MessageCreatedEvent, StreamingEndEvent, StreamingStartEvent, ToolBlockUpdateEvent,
    ToolStartEvent,
};
use futures::StreamExt;

use crate::out::{Failure, Outcome, Stdout, Style, sanitize};
use crate::run_args::RunArgs;
use crate::{agent, approve, demo, out, output_schema, prompt, render, skills};

/// Exit codes: 0 complete, 1 error, 3 max iterations, 4 suspended (waiting
/// for input), 5 usage limit or `--timeout`, 130 cancelled (Ctrl-C).
pub fn exit_code(status: &LoopStatus) -> ExitCode {
    ExitCode::from(match status {
        LoopStatus::Complete { .. } => 0,
        LoopStatus::Error { .. } => 1,
        LoopStatus::MaxIterations => 3,
        LoopStatus::Suspended { .. } => 4,
        LoopStatus::LimitExceeded { .. } => 5,
        LoopStatus::Cancelled => 130,
    })
}

pub async fn run(
    mut args: RunArgs,
    approvals: ApprovalPolicies,
    configured_mcp: McpConfig,
    remote_agents: Vec<agentloop_a2a::client::RemoteAgent>,
    hooks: Hooks,
) -> Outcome {
    let prompt = prompt::read(args.prompt.as_deref())?;
    if args.local {
        crate::local_model::setup(crate::local_model::Flags {
            provider: &mut args.provider,
            base_url: &mut args.base_url,
            model: &mut args.model,
            model_flag: args.model_flag,
            system: Some(&mut args.system),
            max_tokens: &mut args.max_tokens,
            tools: &args.tools,
        })
        .await?;
    }
    let demo = demo::wanted(
        args.demo,
        args.provider.as_deref(),
        args.base_url.as_deref(),
    );
    // A question with no provider configured: the demo plays in its place,
    // and the run does not pass for an answer (no stdout, exit 2).
    let in_place = demo && !args.demo && prompt.is_some();
    let prompt = match prompt {
        Some(prompt) => prompt,
        None if demo => demo::PROMPT.to_owned(),
        // The MCP prompt is the whole of the person's message.
        None if args.mcp_prompt.is_some() => String::new(),
        None => {
            return Err(Failure::usage(
                "no prompt: give it as an argument (agentloop run \"question\"), pipe it in, \
                 or pass - to read it from stdin",
            ));
        }
    };
    let agent = agent::build(&args, demo).await?;
    let mut tools = agent.tools(args.root.as_deref(), agent.chosen.provider.clone())?;
    if can_ask(args.json, demo || args.local || args.no_ask_user) {
        crate::tools::offer_ask_user(&mut tools);
    }
    let handoffs = agent.handoffs(
        args.starting.as_ref(),
        args.root.as_deref(),
        agent.chosen.provider.clone(),
    )?;
    let agent::Agent {
        strategy,
        chosen,
        options,
        ..
    } = agent;
    // Kept until the run ends: dropping the servers stops their processes.
    let (mcp, forms_open) = args
        .mcp
        .start(configured_mcp, forms(args.json, demo || args.local))
        .await?;
    let mcp_tool_names: Vec<String> = mcp.tools().iter().map(|t| t.name().to_owned()).collect();
    tools.extend(mcp.tools());
    let (a2a_tools, a2a_calls) = crate::a2a_agents::tools(remote_agents).await?;
    tools.extend(a2a_tools);
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    let skills = skills::for_run(args.skills.as_deref(), args.root.as_deref(), &tools)
        .map_err(Failure::Usage)?;
    if in_place {
        // Said once the run is sure to start, so a mistake stays one line.
        out::note(demo::IN_PLACE_NOTICE);
    } else if demo {
        out::note(demo::NOTICE);
    }
    let mut deps = RunDeps::new(chosen.provider)
        .with_tools(tools)
        .with_cancel(cancel);
    deps.hooks = hooks;
    if let Some(handoffs) = handoffs {
        deps = deps.with_handoffs(handoffs);
    }
    let mut context = match &args.mcp_prompt {
        Some(name) => mcp
            .prompt(name, &prompt_arguments(&args.mcp_args)?)
            .await
            .map_err(|e| Failure::Runtime(format!("--mcp-prompt {name}: {e}")))?,
        None => Vec::new(),
    };
    if !prompt.is_empty() || context.is_empty() {
        context.push(Message::user_text("user-1", prompt));
    }
    let mut options = options;
    let value_only = args.json && options.output_schema.is_some();
    options.approvals = approvals;
    options.request.system_prompt = crate::project_instructions::with_system(
        args.root.as_deref(),
        options.request.system_prompt.take(),
    )?;
    let run = prepare(options, context, deps, &skills);
    let (options, deps) = (run.options.clone(), run.deps.clone());
    let mut events = strategy.run(run.options, run.context, run.deps);

    // A person answers when stdin is a terminal; else calls that need one
    // are rejected and the run goes on.
    let interactive = std::io::stdin().is_terminal();
    // Made at the first question: most runs never ask.
    let mut person: Option<Person> = None;
    let mut show = Show {
        json: args.json,
        value_only,
        mcp_tool_names,
        view: render::View::new(Style::stderr()),
        spinner: Spinner::new(out::stderr_is_live(), forms_open),
        answer_live: std::io::stdout().is_terminal(),
    };
    // Pending calls are settled here (asked, or rejected with a note), not
    // drawn by the view.
    show.view.set_asking(true);
    let result = loop {
        let Some(result) = show.events(&mut events).await? else {
            break None;
        };
        let LoopStatus::Suspended {
            pending,
            state: Some(state),
        } = &result.status
        else {
            break Some(result);
        };
        let state = state.as_ref();
        if interactive && person.is_none() {
            person = Some(Person::new()?);
        }
        let decisions = match &mut person {
            None => approve::without_person(pending),
            Some(person) => match person.asker.ask(&mut person.editor, pending)? {
                approve::Reply::Decided(decisions) => decisions,
                approve::Reply::Cancel => {
                    events = agentloop_engine::cancel_waiting(
                        options.clone(),
                        state.clone(),
                        deps.clone(),
                    )
                    .map_err(|e| e.to_string())?;
                    continue;
                }
                approve::Reply::Leave => {
                    // Say what it was waiting for: the prompt is gone.
                    let mut stderr = std::io::stderr();
                    show.view
                        .summary(&mut stderr, &result)
                        .map_err(Failure::from_io)?;
                    break Some(result);
                }
            },
        };
        events = agentloop_engine::decide(options.clone(), state.clone(), decisions, deps.clone())
            .map_err(|e| e.to_string())?;
    };
    let mut stdout = Stdout::new();
    let status = result.as_ref().map(|r| &r.status);
    if value_only {
        if let Some(line) = output_schema::value_line(status)? {
            stdout.line(line)?;
        }
    } else if !args.json
        && !show.answer_live
        && !in_place
        && let Some(answer) = result.as_ref().and_then(answer)
    {
        // A demo played in place of a question is no answer to keep: it
        // was shown on stderr.
        stdout.line(answer)?;
    }
    mcp.shutdown().await;
    crate::a2a_agents::settle(&a2a_calls).await;
    // A person at a terminal watched the demo and reads what to do next;
    // a script reading stdout must not take the demo for an answer.
    let for_a_script = !std::io::stdout().is_terminal();
    if in_place {
        out::note(demo::after_question(for_a_script));
    }
    Ok(match status {
        None => ExitCode::from(out::EXIT_FAILURE),
        Some(LoopStatus::Complete { .. }) if in_place && for_a_script => {
            ExitCode::from(out::EXIT_USAGE)
        }
        Some(status) => exit_code(status),
    })
}

/// Who answers MCP servers' forms: the person at the terminal where one
/// can answer (see [`can_ask`]), else no one.
pub fn forms(json: bool, unless: bool) -> crate::mcp_flags::Forms {
    if can_ask(json, unless) {
        crate::mcp_flags::Forms::Asked
    } else {
        crate::mcp_flags::Forms::Unoffered
    }
}

/// Whether a person can answer the model's questions: stdin and stdout
/// are a terminal and the output is the view, not JSON lines. `unless`:
/// a run that must not ask (the demo's script and the small local model
/// never ask well; `--no-ask-user`).
pub fn can_ask(json: bool, unless: bool) -> bool {
    !json && !unless && std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// What a person answers with: the line editor on the terminal (prompts
/// on the terminal itself, even when stdout is redirected) and what they
/// decided so far.
struct Person {
    editor: rustyline::DefaultEditor,
    asker: approve::Asker,
}

impl Person {
    fn new() -> Result<Self, Failure> {
        let config = rustyline::Config::builder()
            .behavior(rustyline::config::Behavior::PreferTerm)
            .auto_add_history(false)
            .build();
        let editor = rustyline::DefaultEditor::with_config(config)
            .map_err(|e| format!("cannot start the line editor: {e}"))?;
        Ok(Self {
            editor,
            asker: approve::Asker::new(Style::stderr()),
        })
    }
}

/// The answer `run` (and a chat whose stdout is not a terminal) prints on
/// stdout: the last assistant text, else the value the run returned.
pub fn answer(result: &agentloop_types::LoopResult) -> Option<String> {
    if let Some(text) = result.final_text().filter(|t| !t.trim().is_empty()) {
        return Some(sanitize(text.trim_end()).into_owned());
    }
    match &result.status {
        LoopStatus::Complete {
            return_value: Some(value),
            ..
        }
        | LoopStatus::Complete {
            output: Some(value),
            ..
        } => Some(match value {
            serde_json::Value::String(s) => sanitize(s).into_owned(),
            other => other.to_string(),
        }),
        _ => None,
    }
}

/// How a run's events are shown: JSON lines on stdout, or the terminal
/// view with the root run's text on stdout when it is a terminal (else on
/// stderr with the rest, the answer printed once at the end).
struct Show {
    json: bool,
    value_only: bool,
    mcp_tool_names: Vec<String>,
    view: render::View,
    spinner: Spinner,
    answer_live: bool,
}

impl Show {
    /// Shows a stream's events; returns the root run's result.
    async fn events(
        &mut self,
        events: &mut agentloop_engine::RunStream,
    ) -> Result<Option<agentloop_types::LoopResult>, Failure> {
        let mut stdout = Stdout::new();
        let mut stderr = std::io::stderr();
        let mut result = None;
        loop {
            let next = if self.spinner.active && !self.json {
                match tokio::time::timeout(Duration::from_millis(100), events.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        self.spinner.tick();
                        continue;
                    }
                }
            } else {
                events.next().await
            };
            let Some(event) = next else { break };
            if let Some(root) = event.root_result() {
                result = Some(root.clone());
            }
            if self.value_only {
                continue;
            }
            if self.json {
                let line = serde_json::to_string(&event).map_err(|e| e.to_string())?;
                stdout.line(line)?;
                continue;
            }
            let kind = &event.kind;
            // While the model or a root tool works, the spinner counts.
            if matches!(kind, EventKind::StreamingStart(StreamingStartEvent { .. }))
                || (event.path.is_root()
                    && matches!(kind, EventKind::ToolStart(ToolStartEvent { .. })))
            {
                self.spinner.start();
            } else if matches!(
                kind,
                EventKind::FirstChunk
                    | EventKind::StreamingEnd(StreamingEndEvent { .. })
                    | EventKind::MessageCreated(MessageCreatedEvent { .. })
            ) {
                self.spinner.stop();
            }
            if let EventKind::ToolBlockUpdate(ToolBlockUpdateEvent { block, .. }) = kind
                && self.mcp_tool_names.contains(&block.name)
            {
                self.spinner.stop();
                self.view
                    .mcp_progress(&mut stderr, block)
                    .map_err(Failure::from_io)?;
            }
            let mut sinks = if self.answer_live {
                render::Sinks::split(&mut stdout, &mut stderr)
            } else {
                render::Sinks::one(&mut stderr)
            };
            self.view
                .event(&mut sinks, &event)
                .map_err(Failure::from_io)?;
        }
        self.spinner.stop();
        Ok(result)
    }
}

/// The `--mcp-arg NAME=VALUE` arguments of an MCP prompt.
fn prompt_arguments(given: &[String]) -> Result<BTreeMap<String, String>, Failure> {
    given
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_owned(), value.to_owned()))
            }
            _ => Err(Failure::usage(format!(
                "--mcp-arg {pair:?}: write it as NAME=VALUE"
            ))),
        })
        .collect()
}

/// A spinner with the elapsed seconds on stderr while waiting for the
/// first token; only when stderr is a live terminal, and never over a
/// form a server asks the person to fill in.
struct Spinner {
    live: bool,
    active: bool,
    frame: usize,
    since: Instant,
    forms: crate::forms::FormsOpen,
}

impl Spinner {
    const FRAMES: [&'static str; 4] = ["⠋", "⠙", "⠸", "⠴"];

    fn new(live: bool, forms: crate::forms::FormsOpen) -> Self {
        Self {
            live,
            active: false,
            frame: 0,
            since: Instant::now(),
            forms,
        }
    }

    fn start(&mut self) {
        self.active = self.live;
        self.frame = 0;
        self.since = Instant::now();
    }

    fn tick(&mut self) {
        if self.forms.is_open() {
            return;
        }
        let frame = Self::FRAMES[self.frame % Self::FRAMES.len()];
        self.frame += 1;
        let seconds = self.since.elapsed().as_secs_f32();
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "\r{frame} {seconds:.1}s ");
        let _ = stderr.flush();
    }

    fn stop(&mut self) {
        if self.active {
            self.active = false;
            if self.frame > 0 {
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
            }
        }
    }
}
