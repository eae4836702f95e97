//! A run's options (seed 000's `AgenticLoopOptions`), in two parts: what
//! the loop decides ([`LoopOptions`]: limits, tools, approvals, compaction,
//! output validation) and what each model request carries
//! ([`RequestOptions`]: model, sampling, reasoning, web search, streaming),
//! which is all a provider reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::approval::ApprovalPolicies;
use crate::context::ContextOptions;
use crate::message::ApiKind;

/// How hard an OpenAI reasoning model thinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// No reasoning where the model allows it.
    None,
    /// Minimal reasoning.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
}

/// Whether an OpenAI reasoning model returns a summary of its reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ReasoningSummary {
    /// The provider decides.
    Auto,
    /// Short summary.
    Concise,
    /// Long summary.
    Detailed,
}

/// Limits that end a run with [`LoopStatus::LimitExceeded`](crate::result::LoopStatus::LimitExceeded).
/// `None` means unlimited.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct UsageLimits {
    /// Model requests in the run.
    pub max_requests: Option<u32>,
    /// Tool calls in the run.
    pub max_tool_calls: Option<u32>,
    /// Input plus output tokens in the run.
    pub max_total_tokens: Option<u64>,
    /// Cost in US dollars.
    pub max_cost: Option<f64>,
}

/// How a run asks the model for its structured final answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// The API's own structured-output request form where it has one
    /// (OpenAI Chat, OpenAI Responses, Gemini); the [`FINAL_OUTPUT_TOOL`]
    /// where it has none (Anthropic Messages).
    #[default]
    Native,
    /// Always the [`FINAL_OUTPUT_TOOL`]: portable across every API.
    Tool,
}

/// Name of the tool offered in [`OutputMode::Tool`]: its input schema is
/// the output schema, and its input is the run's output.
pub const FINAL_OUTPUT_TOOL: &str = "final_output";

/// The shape a run's final answer must have: a JSON Schema with a name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OutputSchema {
    /// Name of the schema (the providers' `json_schema.name`), letters,
    /// digits, `_` and `-`.
    pub name: String,
    /// The JSON Schema the answer is validated against.
    pub schema: Value,
    /// How the model is asked for it.
    #[serde(default)]
    pub mode: OutputMode,
    /// How many times an invalid answer goes back to the model with the
    /// validation errors before the run ends with `output_invalid`.
    #[serde(default = "default_output_retries")]
    pub max_retries: u32,
}

fn default_output_retries() -> u32 {
    2
}

impl OutputSchema {
    /// A schema in [`OutputMode::Native`] with two retries.
    pub fn new(name: impl Into<String>, schema: Value) -> Self {
        Self {
            name: name.into(),
            schema,
            mode: OutputMode::Native,
            max_retries: default_output_retries(),
        }
    }

    /// Sets the mode.
    pub fn with_mode(mut self, mode: OutputMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the number of retries after an invalid answer.
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// Whether a run whose provider speaks `api` asks through the
    /// [`FINAL_OUTPUT_TOOL`]: in [`OutputMode::Tool`], for an API with no
    /// structured-output field, and for a provider that names no API
    /// ([`ModelProvider::api`](crate::ModelProvider::api) is `None`).
    pub fn uses_tool(&self, api: Option<ApiKind>) -> bool {
        self.mode == OutputMode::Tool || !api.is_some_and(ApiKind::has_response_format)
    }

    /// The form a provider enforces natively: the name and the schema.
    pub fn response_format(&self) -> ResponseFormat {
        ResponseFormat {
            name: self.name.clone(),
            schema: self.schema.clone(),
        }
    }
}

/// A JSON Schema the provider holds the answer to with its API's own
/// structured-output field (OpenAI Chat `response_format`, Responses
/// `text.format`, Gemini `responseJsonSchema`). The engine sets it on a
/// [`ModelRequest`](crate::ModelRequest) when a run's [`OutputSchema`] is
/// enforced natively; a provider whose API has no such field ignores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResponseFormat {
    /// Name of the schema (`json_schema.name`).
    pub name: String,
    /// The schema.
    pub schema: Value,
}

/// How a run makes room when the next request would fill too much of the
/// model's context window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CompactionStrategy {
    /// Send the whole history, however long.
    #[default]
    None,
    /// Replace older turns in the request with a summary written by a
    /// separate model call.
    Summarise,
    /// Leave the oldest turns out of the request.
    DropOldest,
}

impl CompactionStrategy {
    /// The snake_case name, as serialised.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Summarise => "summarise",
            Self::DropOldest => "drop_oldest",
        }
    }
}

/// When and how a run compacts what it sends (never what it stores). Takes
/// effect only when [`LoopOptions::context_window`] is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct CompactionOptions {
    /// What to do.
    pub strategy: CompactionStrategy,
    /// Compact when the estimated request exceeds this fraction of the
    /// context window.
    pub threshold: f32,
    /// Assistant turns at the end of the history (with the tool results
    /// that answer them) that are always sent verbatim.
    pub keep_last_turns: u32,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        Self {
            strategy: CompactionStrategy::None,
            threshold: 0.8,
            keep_last_turns: 2,
        }
    }
}

/// What every model request of a run carries: the model, its sampling and
/// reasoning settings, the prompt around the history and how the answer is
/// delivered. Providers read only this part of a run's options
/// ([`ModelRequest::options`](crate::ModelRequest::options)); the loop's own
/// policy stays in [`LoopOptions`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct RequestOptions {
    /// Model id as the provider knows it.
    pub model: String,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Output token cap per model turn.
    pub max_tokens: u32,
    /// System prompt, sent before any system messages in the history.
    pub system_prompt: Option<String>,
    /// Text the assistant turn starts with (Anthropic only).
    pub prefill_response: Option<String>,
    /// Stop sequences.
    pub stop_sequences: Vec<String>,
    /// Offer the provider's server-side web search.
    pub web_search_enabled: bool,
    /// Ask for one whole response instead of a stream.
    pub disable_stream: bool,
    /// Anthropic extended thinking.
    pub enable_reasoning: bool,
    /// Anthropic thinking budget.
    pub reasoning_budget_tokens: u32,
    /// OpenAI reasoning effort.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// OpenAI reasoning summary.
    pub reasoning_summary: Option<ReasoningSummary>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        Self {
            model: String::new(),
            temperature: None,
            max_tokens: 4096,
            system_prompt: None,
            prefill_response: None,
            stop_sequences: Vec::new(),
            web_search_enabled: false,
            disable_stream: false,
            enable_reasoning: false,
            reasoning_budget_tokens: 0,
            reasoning_effort: None,
            reasoning_summary: None,
        }
    }
}

/// Everything one run needs: what the loop decides, and the
/// [`RequestOptions`] each model request carries. No chat or project
/// objects. The serialised form is flat: the request options' fields sit
/// beside the loop's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct LoopOptions {
    /// What every model request carries (model, sampling, prompt,
    /// reasoning, web search, streaming).
    #[serde(flatten)]
    pub request: RequestOptions,
    /// Project the run belongs to (tools use it to reach project data).
    pub project_id: String,
    /// Chat the run belongs to; `None` for standalone runs and sub-agents.
    pub chat_id: Option<String>,
    /// Names of the tools offered to the model; empty offers every tool the
    /// run was given.
    pub enabled_tools: Vec<String>,
    /// Keep thinking blocks only in the last N assistant messages sent to the
    /// provider; older thinking is left out of requests, never out of the
    /// messages returned. `None` keeps all.
    pub thinking_keep_turns: Option<u32>,
    /// Model turns before the run ends with `max_iterations`.
    pub max_iterations: u32,
    /// How many tool calls of one turn run at once.
    pub tool_concurrency: usize,
    /// Wall-clock limit for one tool call, in milliseconds.
    pub tool_timeout_ms: Option<u64>,
    /// Wall-clock limit for the whole run, in milliseconds, counted by the
    /// driver from when the run's stream is first polled (a resumed run
    /// gets the limit afresh). When it passes, the run stops as a cancel
    /// would (every open call answered, nothing more started) and ends
    /// with [`LoopStatus::LimitExceeded`](crate::result::LoopStatus::LimitExceeded)
    /// `{limit: timeout}`. `None` is unlimited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Usage limits for the whole run.
    pub limits: UsageLimits,
    /// Option values per tool name (seed 003's tool options); each tool's
    /// declared defaults fill in what is missing.
    pub tool_options: BTreeMap<String, Map<String, Value>>,
    /// The shape the final answer must have; the completed result then
    /// carries it as `output`. The engine validates the answer against it
    /// and decides once, from the provider's API, whether the model is
    /// asked through the [`FINAL_OUTPUT_TOOL`] or the request's
    /// [`ResponseFormat`]. Only the native strategy honours it: a run of
    /// another strategy that asks for one ends with
    /// [`LoopError::OutputSchemaUnsupported`](crate::LoopError::OutputSchemaUnsupported)
    /// before any request. Child runs never inherit it ([`Self::for_child`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
    /// The model's context window in tokens, when known (callers fill it
    /// from their model table); compaction needs it.
    pub context_window: Option<u32>,
    /// Compaction of long requests.
    pub compaction: CompactionOptions,
    /// Tool search, tool output budgets and the clearing of old tool
    /// results: what requests carry of the tools and their results.
    #[serde(skip_serializing_if = "ContextOptions::is_default")]
    pub context: ContextOptions,
    /// Which calls wait for a person's approval, by tool name over each
    /// tool's own default (`"*"`: every tool without an entry).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub approvals: ApprovalPolicies,
}

impl Default for LoopOptions {
    fn default() -> Self {
        Self {
            request: RequestOptions::default(),
            project_id: String::new(),
            chat_id: None,
            enabled_tools: Vec::new(),
            thinking_keep_turns: None,
            max_iterations: 50,
            tool_concurrency: 8,
            tool_timeout_ms: None,
            timeout_ms: None,
            limits: UsageLimits::default(),
            tool_options: BTreeMap::new(),
            output_schema: None,
            context_window: None,
            compaction: CompactionOptions::default(),
            context: ContextOptions::default(),
            approvals: ApprovalPolicies::new(),
        }
    }
}

impl LoopOptions {
    /// The options a child run starts from — a run a tool starts inside
    /// its call (a minion's, a skill's): the same request options and
    /// policy, every tool the child is given offered (`enabled_tools`
    /// cleared), no output schema, since only the root run's answer is
    /// held to one, and no wall-clock limit of its own: the parent's
    /// deadline cancels the call, and the child with it. The one place
    /// that rule is written.
    pub fn for_child(&self) -> Self {
        Self {
            enabled_tools: Vec::new(),
            output_schema: None,
            timeout_ms: None,
            ..self.clone()
        }
    }
}
