//! The run inspector's reading of an agent run, assembled from what is
//! stored — its kept steps, its history, its log and its chat's settings —
//! with no service of its own: a timeline of steps, each with the request
//! it sent, the messages it added, what it spent and took, the tool calls
//! it made (each with its duration) and the files those changed.
//!
//! A model step's request is the one its run's log recorded (see
//! [`agentloop_types::sent`]): its messages as sent — compaction, trimmed
//! thinking and cleared results included —, its tools and its options.
//! A log written before requests were recorded has none; such a step's
//! request is *reconstructed* from its messages and the run's agent as
//! configured now, and the inspection says so.

pub mod eval_case;
mod files;
pub mod logged;
pub mod redact;

use agentloop_storage::RunStep;
use agentloop_types::{
    ContentBlock, Message, RequestOptions, ResponseFormat, RunPhase, SentMessages, TokenTotals,
    ToolDefinition, ToolUseBlock,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

pub use files::FileChange;
use logged::{Logged, LoggedRequest};
use redact::{REDACTED, redact_text, redact_value, redacted};

/// An agent run as the inspector shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunInspection {
    /// The agent run.
    pub run_id: String,
    /// How its model steps' requests are shown: `recorded` (each from the
    /// run's log, as sent: see a step's `request`) or `reconstructed` (a
    /// log that recorded none: rebuilt from each step's messages and the
    /// agent as configured now; see `note`).
    pub request_source: &'static str,
    /// How the requests and durations shown were obtained.
    pub note: &'static str,
    /// The options the run's agent is configured with now (secrets
    /// redacted): what a reconstructed request carries.
    pub options: RequestOptions,
    /// The tools offered: those the recorded requests offered, by name
    /// (the latest definition of each), or, when none was recorded, the
    /// agent's tools as configured now.
    pub tools: Vec<OfferedTool>,
    /// The run's history (secrets redacted): a step's messages are its
    /// first `messages_before`, and it added those up to `messages_after`.
    pub messages: Vec<Message>,
    /// The kept steps, oldest first.
    pub steps: Vec<InspectedStep>,
}

/// The note of an inspection whose requests were recorded.
pub const RECORDED: &str = "Each model step shows the request its run's log recorded, as it was sent: \
its messages (compacted, trimmed or cleared as the engine sent them), tools and options. Secrets are \
redacted. A step's duration is the time from it to the next step (a model step's: the model call's \
latency); each tool call's is its own, by the run's clock.";

/// The note of an inspection whose log recorded no request.
pub const RECONSTRUCTED: &str = "This run's log records no request, so each request is rebuilt \
from the step's messages and the agent's tools and options as configured now (MCP servers' tools \
aside). Compaction or cleared tool results the engine applied to a request are not shown. Secrets \
are redacted. A step's duration is the time from it to the next step: a model step's is the model \
call's latency, a tool step's is its calls' wall time together.";

/// The request a model step sent, as its run's log recorded it (secrets
/// redacted).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StepRequest {
    /// The seq of the request's `streaming_start` event.
    pub seq: u64,
    /// Its options.
    pub options: RequestOptions,
    /// The names of the tools it offered, in the order sent; their
    /// definitions are the inspection's `tools`.
    pub tools: Vec<String>,
    /// The schema its answer was held to, when one was sent natively.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Its messages in the order sent: ranges of the inspection's
    /// `messages` sent as stored (`{"history": {"from", "to"}}`, `to`
    /// excluded), and messages this request alone carried
    /// (`{"message": …}`: a compaction's summary, a message with its
    /// thinking trimmed or results cleared, a prompt of this call's own).
    pub messages: Vec<SentMessages>,
}

impl StepRequest {
    fn of(request: &LoggedRequest) -> Self {
        Self {
            seq: request.seq,
            options: redacted(&*request.options).unwrap_or_default(),
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
            response_format: request.response_format.clone(),
            messages: request
                .messages
                .iter()
                .map(|part| match part {
                    SentMessages::Message(message) => SentMessages::Message(shown(message)),
                    range @ SentMessages::History { .. } => range.clone(),
                })
                .collect(),
        }
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OfferedTool {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
}

impl OfferedTool {
    /// The shape of tool definition `tool`.
    pub fn of(tool: &ToolDefinition) -> Self {
        Self {
            name: tool.name.clone(),
            description: redact_text(&tool.description),
            input_schema: (*tool.input_schema).clone(),
        }
    }
}

/// One kept step.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct InspectedStep {
    /// Its address: the seq of the last event logged before it (what
    /// `POST /api/agent-runs/{runId}/fork` takes).
    pub seq: u64,
    /// When it was taken (Unix ms).
    pub at: i64,
    /// What the run did from it: `model` (a model call), `tools` (the
    /// calls of the previous turn) or `end`.
    pub next: &'static str,
    /// How many of the run's messages it was given (the request's, for a
    /// model step).
    pub messages_before: u64,
    /// How many there were once it was done: those between are what it
    /// added (the response, or the tools' results).
    pub messages_after: u64,
    /// Milliseconds from it to the next step (or to the run's end), when
    /// known.
    pub duration_ms: Option<i64>,
    /// The request it sent, as recorded: a model step's whose log recorded
    /// it (absent otherwise; the request is then reconstructed from
    /// `messages_before` and the inspection's `options` and `tools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<StepRequest>,
    /// What it spent.
    pub tokens: TokenTotals,
    /// What the run had spent before it.
    pub totals_before: TokenTotals,
    /// The tool calls it ran, with their results.
    pub tool_calls: Vec<ToolCall>,
    /// The files those calls changed, as their arguments tell it.
    pub files: Vec<FileChange>,
    /// What the step changed in the project's folder, read from the file
    /// checkpoints the run took (the changes of `shell` and JavaScript
    /// calls too): from the checkpoint before the step to the one before
    /// the next step that took one, or to the folder as it is now. Absent
    /// for a step that took no checkpoint (or on a server that keeps
    /// none). Secrets are redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder_changes: Option<FolderChanges>,
}

/// What a step changed in the project's folder (see
/// [`InspectedStep::folder_changes`]).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FolderChanges {
    /// The step the changes run to: `null` for the folder as it is now.
    pub until: Option<u64>,
    /// Each path added, modified or removed, with a unified diff for
    /// text.
    pub changes: Vec<agentloop_tools::checkpoint::FileChange>,
}

/// A tool call of a step, with its result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolCall {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments (secrets redacted).
    pub input: Value,
    /// What the tool answered, once it has.
    pub result: Option<String>,
    /// Whether it failed.
    pub is_error: bool,
    /// How long it took (milliseconds), when its `tool_end` event says.
    pub duration_ms: Option<u32>,
}

/// What the inspection of a run is read from.
pub struct Stored<'a> {
    /// Its kept steps, oldest first.
    pub steps: &'a [RunStep],
    /// Its whole history.
    pub history: &'a [Message],
    /// What it has spent in all.
    pub totals: TokenTotals,
    /// When it ended, if it has.
    pub ended_at: Option<i64>,
    /// What its log says of its requests and tool calls.
    pub logged: &'a Logged,
}

/// The inspection of run `run_id` from what is stored of it, its requests'
/// `options` and `tools`.
pub fn inspect(
    run_id: &str,
    stored: &Stored<'_>,
    options: &RequestOptions,
    tools: &[ToolDefinition],
) -> RunInspection {
    let total = stored.history.len() as u64;
    let steps = stored
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let following = stored.steps.get(i + 1);
            let before = step.message_count.min(total);
            let after = following.map_or(total, |next| next.message_count.min(total));
            let tokens_after = following.map_or(stored.totals, RunStep::tokens);
            let duration_ms = match following {
                Some(next) => Some(next.created_at - step.created_at),
                None => stored.ended_at.map(|end| end - step.created_at),
            };
            let (tool_calls, request) = match &step.state.phase {
                RunPhase::RunTools { calls, .. } => (
                    tool_calls(calls, stored.history, before, after, stored.logged),
                    None,
                ),
                RunPhase::CallModel => {
                    let sent = stored
                        .logged
                        .request_of(step.seq, following.map(|next| next.seq));
                    (Vec::new(), sent.map(StepRequest::of))
                }
                RunPhase::Finished => (Vec::new(), None),
            };
            let files = tool_calls
                .iter()
                .filter_map(|call| files::change_of(&call.name, &call.input, call.is_error))
                .collect();
            InspectedStep {
                seq: step.seq,
                at: step.created_at,
                next: next_of(&step.state.phase),
                messages_before: before,
                messages_after: after.max(before),
                duration_ms: duration_ms.filter(|ms| *ms >= 0),
                request,
                tokens: spent(&tokens_after, &step.tokens()),
                totals_before: step.tokens(),
                tool_calls,
                files,
                folder_changes: None,
            }
        })
        .collect();
    let recorded = !stored.logged.requests.is_empty();
    let tools = if recorded {
        recorded_tools(&stored.logged.requests)
    } else {
        tools.iter().map(OfferedTool::of).collect()
    };
    RunInspection {
        run_id: run_id.to_owned(),
        request_source: if recorded {
            "recorded"
        } else {
            "reconstructed"
        },
        note: if recorded { RECORDED } else { RECONSTRUCTED },
        options: redacted(options).unwrap_or_default(),
        tools,
        messages: stored.history.iter().map(shown).collect(),
        steps,
    }
}

/// Every tool the recorded requests offered, in the order first
/// offered, each with its latest definition.
fn recorded_tools(requests: &[LoggedRequest]) -> Vec<OfferedTool> {
    let mut tools: Vec<OfferedTool> = Vec::new();
    let mut previous: Option<&std::sync::Arc<[ToolDefinition]>> = None;
    for request in requests {
        // Requests that offered the same tools share one list.
        if previous.is_some_and(|p| std::sync::Arc::ptr_eq(p, &request.tools)) {
            continue;
        }
        previous = Some(&request.tools);
        for tool in request.tools.iter() {
            let shown = OfferedTool::of(tool);
            match tools.iter_mut().find(|t| t.name == tool.name) {
                Some(known) => *known = shown,
                None => tools.push(shown),
            }
        }
    }
    tools
}

/// What the run does from a step, by the API's names.
pub fn next_of(phase: &RunPhase) -> &'static str {
    match phase {
        RunPhase::CallModel => "model",
        RunPhase::RunTools { .. } => "tools",
        RunPhase::Finished => "end",
    }
}

/// `message` with its secrets redacted.
fn shown(message: &Message) -> Message {
    redacted(message).unwrap_or_else(|| {
        Message::new(
            message.id.clone(),
            message.role,
            vec![ContentBlock::text(REDACTED)],
        )
    })
}

/// The calls a tool step runs, with their results among the run's
/// messages from `before` up to `after`.
fn tool_calls(
    calls: &[ToolUseBlock],
    history: &[Message],
    before: u64,
    after: u64,
    logged: &Logged,
) -> Vec<ToolCall> {
    let (Ok(before), Ok(after)) = (usize::try_from(before), usize::try_from(after)) else {
        return Vec::new();
    };
    let results: Vec<_> = history
        .get(before..after.max(before))
        .unwrap_or_default()
        .iter()
        .flat_map(Message::tool_results)
        .collect();
    calls
        .iter()
        .map(|call| {
            let result = results.iter().find(|r| r.tool_use_id == call.id);
            let mut input = serde_json::from_str(call.input.as_json())
                .unwrap_or_else(|_| Value::String(call.input.as_json().to_owned()));
            redact_value(&mut input);
            ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                input,
                result: result.map(|r| redact_text(&r.content)),
                is_error: result.is_some_and(|r| r.is_error),
                duration_ms: logged.durations.get(&call.id).copied(),
            }
        })
        .collect()
}

/// What was spent between `before` and `after`.
fn spent(after: &TokenTotals, before: &TokenTotals) -> TokenTotals {
    TokenTotals {
        input_tokens: after.input_tokens.saturating_sub(before.input_tokens),
        output_tokens: after.output_tokens.saturating_sub(before.output_tokens),
        reasoning_tokens: after
            .reasoning_tokens
            .saturating_sub(before.reasoning_tokens),
        cache_creation_tokens: after
            .cache_creation_tokens
            .saturating_sub(before.cache_creation_tokens),
        cache_read_tokens: after
            .cache_read_tokens
            .saturating_sub(before.cache_read_tokens),
        web_search_count: after
            .web_search_count
            .saturating_sub(before.web_search_count),
        cost: (after.cost - before.cost).max(0.0),
        cost_unreliable: after.cost_unreliable,
    }
}
