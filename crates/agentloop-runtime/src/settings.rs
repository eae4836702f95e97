//! Typed project and chat settings, and seed 000's
//! `buildAgenticLoopOptions`: flat [`LoopOptions`] from both.
//!
//! Settings are stored as JSON objects; every field is optional and unknown
//! keys are ignored, so older and newer settings documents both parse (an
//! `api` key of older documents among them: the wire API is the provider's,
//! [`ModelProvider::api`](agentloop_types::ModelProvider::api)). A chat's
//! setting overrides its project's.

use std::collections::BTreeMap;

use agentloop_types::{
    ApprovalPolicies, ContextOptions, LoopOptions, ReasoningEffort, ReasoningSummary,
    SteerStrategy, UsageLimits,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{RuntimeError, RuntimeResult};

/// Loop settings a project or a chat may set. `None` leaves the value to the
/// next level (chat → project → [`LoopOptions::default`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopSettings {
    /// Model id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// System prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Output token cap per turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Text the assistant turn starts with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_response: Option<String>,
    /// Server-side web search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_search_enabled: Option<bool>,
    /// Tools offered to the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// Ask for a whole response instead of a stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_stream: Option<bool>,
    /// Anthropic extended thinking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_reasoning: Option<bool>,
    /// Anthropic thinking budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_budget_tokens: Option<u32>,
    /// Keep thinking in the last N assistant messages sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_keep_turns: Option<u32>,
    /// OpenAI reasoning effort.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// OpenAI reasoning summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_summary: Option<ReasoningSummary>,
    /// Model turns per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    /// Concurrent tool calls per turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_concurrency: Option<usize>,
    /// Wall-clock limit per tool call (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_timeout_ms: Option<u64>,
    /// Wall-clock limit per run (ms); past it the run ends
    /// `limit_exceeded` (`timeout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Usage limits per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<UsageLimits>,
    /// Option values per tool; merged per tool, the chat's keys winning.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_options: BTreeMap<String, Map<String, Value>>,
    /// Approval policies per tool name (`"*"`: every other tool); the
    /// chat's entries win over the project's, name by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub approvals: ApprovalPolicies,
    /// Tool search, tool output budgets and the clearing of old tool
    /// results (`{"tool_search_threshold": 50, "tool_output_budget":
    /// 2000}`); the chat's object replaces the project's whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextOptions>,
}

/// A project's settings: the defaults of its chats.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProjectSettings {
    /// Loop defaults.
    #[serde(flatten)]
    pub loop_settings: LoopSettings,
    /// What a run still going does with a message sent to it when the
    /// message names no strategy ([`SteerStrategy::Enqueue`] when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steer_strategy: Option<SteerStrategy>,
}

/// A chat's settings: overrides of its project's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatSettings {
    /// Loop overrides.
    #[serde(flatten)]
    pub loop_settings: LoopSettings,
}

impl ProjectSettings {
    /// Parses a stored settings object of project `id`.
    pub fn from_value(id: &str, value: &Value) -> RuntimeResult<Self> {
        parse(format!("project {id}"), value)
    }
}

impl ChatSettings {
    /// Parses a stored settings object of chat `id`.
    pub fn from_value(id: &str, value: &Value) -> RuntimeResult<Self> {
        parse(format!("chat {id}"), value)
    }
}

fn parse<T: serde::de::DeserializeOwned>(owner: String, value: &Value) -> RuntimeResult<T> {
    let value = if value.is_null() {
        Value::Object(Map::new())
    } else {
        value.clone()
    };
    serde_json::from_value(value).map_err(|e| RuntimeError::InvalidSettings {
        owner,
        message: e.to_string(),
    })
}

impl LoopSettings {
    /// Writes every value this level sets into `options`.
    pub fn apply(&self, options: &mut LoopOptions) {
        macro_rules! set {
            ($target:expr; $($field:ident),*) => {$(
                if let Some(value) = &self.$field {
                    $target.$field = value.clone();
                }
            )*};
        }
        macro_rules! set_some {
            ($target:expr; $($field:ident),*) => {$(
                if let Some(value) = &self.$field {
                    $target.$field = Some(value.clone());
                }
            )*};
        }
        set!(
            options.request;
            model,
            max_tokens,
            web_search_enabled,
            disable_stream,
            enable_reasoning,
            reasoning_budget_tokens
        );
        set_some!(
            options.request;
            system_prompt,
            temperature,
            prefill_response,
            reasoning_effort,
            reasoning_summary
        );
        set!(options; enabled_tools, max_iterations, tool_concurrency, limits, context);
        set_some!(options; thinking_keep_turns, tool_timeout_ms, timeout_ms);
        for (tool, values) in &self.tool_options {
            let entry = options.tool_options.entry(tool.clone()).or_default();
            for (key, value) in values {
                entry.insert(key.clone(), value.clone());
            }
        }
        for (tool, policy) in &self.approvals {
            options.approvals.insert(tool.clone(), policy.clone());
        }
    }
}

/// Seed 000's `buildAgenticLoopOptions`: the flat options of a run in
/// `chat_id` of `project_id`, from the defaults, then the project's
/// settings, then the chat's.
pub fn build_loop_options(
    project_id: &str,
    chat_id: Option<&str>,
    project: &ProjectSettings,
    chat: &ChatSettings,
) -> LoopOptions {
    let mut options = LoopOptions {
        project_id: project_id.to_owned(),
        chat_id: chat_id.map(str::to_owned),
        ..LoopOptions::default()
    };
    project.loop_settings.apply(&mut options);
    chat.loop_settings.apply(&mut options);
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chat_overrides_project_and_unknown_keys_are_ignored() {
        let project = ProjectSettings::from_value(
            "p",
            &json!({"model": "m1", "system_prompt": "be brief", "max_tokens": 100,
                    "tool_options": {"js": {"a": 1, "b": 2}}, "theme": "dark",
                    "api": "openai-chat"}),
        )
        .unwrap();
        let chat = ChatSettings::from_value(
            "c",
            &json!({"model": "m2", "tool_options": {"js": {"b": 3}}, "timeout_ms": 30000}),
        )
        .unwrap();
        let options = build_loop_options("p", Some("c"), &project, &chat);
        assert_eq!(options.timeout_ms, Some(30_000));
        assert_eq!(options.request.model, "m2");
        assert_eq!(options.request.system_prompt.as_deref(), Some("be brief"));
        assert_eq!(options.request.max_tokens, 100);
        assert_eq!(options.chat_id.as_deref(), Some("c"));
        assert_eq!(options.tool_options["js"]["a"], json!(1));
        assert_eq!(options.tool_options["js"]["b"], json!(3));
        assert_eq!(
            options.max_iterations,
            LoopOptions::default().max_iterations
        );
    }

    #[test]
    fn a_project_sets_tool_search_and_budgets_for_its_runs() {
        let project = ProjectSettings::from_value(
            "p",
            &json!({"context": {"tool_search_threshold": 50, "tool_output_budget": 2000}}),
        )
        .unwrap();
        let options = build_loop_options("p", None, &project, &ChatSettings::default());
        assert_eq!(options.context.tool_search_threshold, Some(50));
        assert_eq!(options.context.tool_output_budget, Some(2000));
        let plain = build_loop_options(
            "p",
            None,
            &ProjectSettings::default(),
            &ChatSettings::default(),
        );
        assert!(plain.context.is_default());
    }

    #[test]
    fn bad_settings_are_a_typed_error() {
        let err = ChatSettings::from_value("c", &json!({"max_tokens": "many"})).unwrap_err();
        assert!(matches!(err, RuntimeError::InvalidSettings { .. }));
        assert!(ChatSettings::from_value("c", &Value::Null).is_ok());
    }
}
