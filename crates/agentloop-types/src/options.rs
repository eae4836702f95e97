//! Flat loop options (seed 000's `AgenticLoopOptions`) and usage limits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::approval::ApprovalPolicies;
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

    /// Whether a run over `api` asks through the [`FINAL_OUTPUT_TOOL`]:
    /// in [`OutputMode::Tool`], and for an API with no native form.
    pub fn uses_tool(&self, api: ApiKind) -> bool {
        self.mode == OutputMode::Tool || api == ApiKind::AnthropicMessages
    }
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

/// Everything one run needs, flat: no chat or project objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct LoopOptions {
    /// Model id as the provider knows it.
    pub model: String,
    /// Wire protocol of the provider; the run core uses it to choose how to
    /// ask for structured output (natively, or through `final_output`).
    pub api: ApiKind,
    /// Project the run belongs to (tools use it to reach project data).
    pub project_id: String,
    /// Chat the run belongs to; `None` for standalone runs and sub-agents.
    pub chat_id: Option<String>,
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
    /// Names of the tools offered to the model; empty offers every tool the
    /// run was given.
    pub enabled_tools: Vec<String>,
    /// Ask for one whole response instead of a stream.
    pub disable_stream: bool,
    /// Anthropic extended thinking.
    pub enable_reasoning: bool,
    /// Anthropic thinking budget.
    pub reasoning_budget_tokens: u32,
    /// Keep thinking blocks only in the last N assistant messages sent to the
    /// provider; older thinking is left out of requests, never out of the
    /// messages returned. `None` keeps all.
    pub thinking_keep_turns: Option<u32>,
    /// OpenAI reasoning effort.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// OpenAI reasoning summary.
    pub reasoning_summary: Option<ReasoningSummary>,
    /// Model turns before the run ends with `max_iterations`.
    pub max_iterations: u32,
    /// How many tool calls of one turn run at once.
    pub tool_concurrency: usize,
    /// Wall-clock limit for one tool call, in milliseconds.
    pub tool_timeout_ms: Option<u64>,
    /// Usage limits for the whole run.
    pub limits: UsageLimits,
    /// Option values per tool name (seed 003's tool options); each tool's
    /// declared defaults fill in what is missing.
    pub tool_options: BTreeMap<String, Map<String, Value>>,
    /// The shape the final answer must have; the completed result then
    /// carries it as `output`. Honoured by the native strategy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
    /// The model's context window in tokens, when known (callers fill it
    /// from their model table); compaction needs it.
    pub context_window: Option<u32>,
    /// Compaction of long requests.
    pub compaction: CompactionOptions,
    /// Which calls wait for a person's approval, by tool name over each
    /// tool's own default (`"*"`: every tool without an entry).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub approvals: ApprovalPolicies,
}

impl Default for LoopOptions {
    fn default() -> Self {
        Self {
            model: String::new(),
            api: ApiKind::AnthropicMessages,
            project_id: String::new(),
            chat_id: None,
            temperature: None,
            max_tokens: 4096,
            system_prompt: None,
            prefill_response: None,
            stop_sequences: Vec::new(),
            web_search_enabled: false,
            enabled_tools: Vec::new(),
            disable_stream: false,
            enable_reasoning: false,
            reasoning_budget_tokens: 0,
            thinking_keep_turns: None,
            reasoning_effort: None,
            reasoning_summary: None,
            max_iterations: 50,
            tool_concurrency: 8,
            tool_timeout_ms: None,
            limits: UsageLimits::default(),
            tool_options: BTreeMap::new(),
            output_schema: None,
            context_window: None,
            compaction: CompactionOptions::default(),
            approvals: ApprovalPolicies::new(),
        }
    }
}
