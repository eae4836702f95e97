//! What a case expects of its run, as the dataset writes it. Checked when
//! the dataset loads ([`Expect::check`]); judged by [`crate::checks`] and,
//! for `judge`, [`crate::judge`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A case's expectations; every one given must hold for the run to pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The run's status (`complete`, `error`, `max_iterations`,
    /// `suspended`, `cancelled`, `limit_exceeded`); default `complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The answer, exactly (surrounding whitespace ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    /// Text the answer must contain (each of them).
    #[serde(default, skip_serializing_if = "OneOrMany::is_empty")]
    pub contains: OneOrMany,
    /// Text the answer must not contain (none of them).
    #[serde(default, skip_serializing_if = "OneOrMany::is_empty")]
    pub not_contains: OneOrMany,
    /// Match `contains` and `not_contains` ignoring case.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_case: bool,
    /// A regular expression the answer must match (anywhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// A JSON Schema the structured output (else the answer parsed as
    /// JSON) must be valid against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// The tools the run calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Trajectory>,
    /// At most this many model turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// At most this many tokens, input and output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// At most this cost in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// At most this many seconds of wall time (a subject may also end the
    /// run then: `agentloop eval` cancels it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_seconds: Option<f64>,
    /// An LLM judge's verdict on the answer against a rubric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeExpect>,
}

/// One string or a list of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// None given.
    #[default]
    None,
    /// One.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl OneOrMany {
    /// The strings.
    pub fn items(&self) -> &[String] {
        match self {
            Self::None => &[],
            Self::One(one) => std::slice::from_ref(one),
            Self::Many(many) => many,
        }
    }

    fn is_empty(&self) -> bool {
        self.items().is_empty()
    }
}

/// The tool calls a run must make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trajectory {
    /// The expected calls.
    pub calls: Vec<CallMatcher>,
    /// How the calls are matched; default `in_order`.
    #[serde(default)]
    pub order: Order,
    /// Whether calls to tools not named in `calls` fail the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub only: bool,
}

/// How a [`Trajectory`]'s calls are matched against the run's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The run's calls are exactly these, in this order.
    Exact,
    /// These calls appear in this order, other calls between them allowed.
    #[default]
    InOrder,
    /// Each of these calls appears, in any order (a set).
    AnyOrder,
}

/// One expected tool call: a tool name, or a name with argument matchers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CallMatcher {
    /// Any call to this tool.
    Name(String),
    /// A call to this tool whose arguments match.
    Call(CallSpec),
}

/// A tool name with argument matchers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    /// The tool's name.
    pub name: String,
    /// Arguments the call must carry: each key's value equal (objects
    /// matched as subsets, recursively).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub args: Map<String, Value>,
    /// Arguments whose text must match a regular expression: key →
    /// pattern (a non-string argument is matched as its JSON text).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub args_regex: Map<String, Value>,
}

impl CallMatcher {
    /// The tool's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Name(name) => name,
            Self::Call(spec) => &spec.name,
        }
    }
}

/// The LLM judge's instructions for a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeExpect {
    /// What a good answer does, in words for the judge.
    pub rubric: String,
    /// The least score (0 to 1) that passes, besides the judge's own
    /// verdict; default: the verdict alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_score: Option<f64>,
}

/// The run statuses an expectation may name.
pub const STATUSES: [&str; 6] = [
    "complete",
    "suspended",
    "error",
    "max_iterations",
    "cancelled",
    "limit_exceeded",
];

impl Expect {
    /// Checks what serde cannot: statuses, patterns, schemas, bounds.
    pub fn check(&self) -> Result<(), String> {
        if let Some(status) = &self.status
            && !STATUSES.contains(&status.as_str())
        {
            return Err(format!(
                "expect.status {status:?} is not a run status; use one of {}",
                STATUSES.join(", ")
            ));
        }
        if let Some(pattern) = &self.regex {
            regex::Regex::new(pattern)
                .map_err(|e| format!("expect.regex is not a valid regular expression: {e}"))?;
        }
        if let Some(schema) = &self.schema {
            jsonschema::validator_for(schema)
                .map_err(|e| format!("expect.schema is not a valid JSON Schema: {e}"))?;
        }
        if let Some(tools) = &self.tools {
            for call in &tools.calls {
                if call.name().trim().is_empty() {
                    return Err("expect.tools.calls: a call needs a tool name".to_owned());
                }
                if let CallMatcher::Call(spec) = call {
                    for (key, pattern) in &spec.args_regex {
                        let Value::String(pattern) = pattern else {
                            return Err(format!(
                                "expect.tools.calls: args_regex.{key} must be a string"
                            ));
                        };
                        regex::Regex::new(pattern).map_err(|e| {
                            format!("expect.tools.calls: args_regex.{key} is not valid: {e}")
                        })?;
                    }
                }
            }
        }
        for (name, value) in [
            ("max_cost", self.max_cost),
            ("max_seconds", self.max_seconds),
        ] {
            if value.is_some_and(|v| !v.is_finite() || v < 0.0) {
                return Err(format!("expect.{name} must be a number of at least 0"));
            }
        }
        if let Some(judge) = &self.judge {
            if judge.rubric.trim().is_empty() {
                return Err("expect.judge.rubric must say what a good answer does".to_owned());
            }
            if judge.min_score.is_some_and(|s| !(0.0..=1.0).contains(&s)) {
                return Err("expect.judge.min_score must be between 0 and 1".to_owned());
            }
        }
        Ok(())
    }
}
