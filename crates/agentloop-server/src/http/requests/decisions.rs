//! A person's decisions on the calls a waiting run waits on.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::body::{Object, RequestBody, from_object};
use crate::http::error::ApiError;

/// `POST /api/agent-runs/{runId}/decisions`: decisions on the calls a
/// waiting run waits on.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decisions {
    /// At least one; each call once.
    #[schemars(required, with = "Vec<DecisionInput>", length(min = 1))]
    pub decisions: Option<Vec<DecisionInput>>,
}

impl RequestBody for Decisions {}

/// What a person decides on one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Run the call (optionally with edited `arguments`).
    Approve,
    /// Run this call and every later call of the same tool in this run.
    ApproveAlways,
    /// Do not run it (the model reads `reason`).
    Reject,
    /// Answer a question (`text`).
    Answer,
}

impl DecisionKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::ApproveAlways => "approve_always",
            Self::Reject => "reject",
            Self::Answer => "answer",
        }
    }
}

/// A decision on one pending call (its schema: [`DecisionInput::json_schema`]).
#[derive(Debug, Clone)]
pub struct DecisionInput {
    /// The call decided on.
    pub call_id: String,
    /// The decision.
    pub decision: DecisionKind,
    /// `approve`: the call's edited arguments.
    pub arguments: Option<Object>,
    /// `reject`: why (a default reason when left out or blank).
    pub reason: Option<String>,
    /// `answer`: the answer (not empty).
    pub text: Option<String>,
}

impl JsonSchema for DecisionInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DecisionInput".into()
    }
    /// Each decision with the fields that go with it.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let call_id = serde_json::json!({"type": "string", "minLength": 1});
        let closed = |properties: Value, required: &[&str]| {
            serde_json::json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false
            })
        };
        schemars::json_schema!({
            "description": "A decision on one pending call. `approve` (optionally with edited `arguments`, a JSON object), `approve_always` (this call and every later call of the same tool in this run), `reject` (with a `reason` the model reads; a default one when left out), `answer` (a question's answer `text`).",
            "oneOf": [
                closed(serde_json::json!({"call_id": call_id, "decision": {"const": "approve"}, "arguments": {"type": ["object", "null"]}}), &["call_id", "decision"]),
                closed(serde_json::json!({"call_id": call_id, "decision": {"const": "approve_always"}}), &["call_id", "decision"]),
                closed(serde_json::json!({"call_id": call_id, "decision": {"const": "reject"}, "reason": {"type": ["string", "null"]}}), &["call_id", "decision"]),
                closed(serde_json::json!({"call_id": call_id, "decision": {"const": "answer"}, "text": {"type": "string", "pattern": "\\S", "description": "The answer; refused when empty or only spaces (reject the question to leave it unanswered)"}}), &["call_id", "decision", "text"]),
            ]
        })
    }
}

/// The fields of a [`DecisionInput`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionFields {
    call_id: String,
    decision: DecisionKind,
    arguments: Option<Object>,
    reason: Option<String>,
    text: Option<String>,
}

impl<'de> Deserialize<'de> for DecisionInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields: DecisionFields = from_object(deserializer)?;
        Ok(Self {
            call_id: fields.call_id,
            decision: fields.decision,
            arguments: fields.arguments,
            reason: fields.reason,
            text: fields.text,
        })
    }
}

/// The reason a model reads when a person rejects a call without saying
/// why.
const DEFAULT_REJECTION: &str = "the user rejected this call";

impl DecisionInput {
    /// The decision it states: each field goes only with its decision.
    pub fn decision(self) -> Result<(String, agentloop_types::Decision), String> {
        use agentloop_types::Decision;
        if self.call_id.is_empty() {
            return Err("call_id must be a non-empty string".to_owned());
        }
        let kind = self.decision;
        let stray = [
            ("arguments", self.arguments.is_some(), DecisionKind::Approve),
            ("reason", self.reason.is_some(), DecisionKind::Reject),
            ("text", self.text.is_some(), DecisionKind::Answer),
        ]
        .into_iter()
        .find(|(_, present, owner)| *present && *owner != kind);
        if let Some((field, _, _)) = stray {
            return Err(format!(
                "{field} does not go with decision {}",
                kind.as_str()
            ));
        }
        let decision = match kind {
            DecisionKind::Approve => Decision::Approve {
                arguments: self.arguments.map(Value::Object),
            },
            DecisionKind::ApproveAlways => Decision::ApproveAlways,
            DecisionKind::Reject => Decision::Reject {
                reason: self
                    .reason
                    .filter(|reason| !reason.trim().is_empty())
                    .unwrap_or_else(|| DEFAULT_REJECTION.to_owned()),
            },
            DecisionKind::Answer => Decision::Answer {
                text: match self.text {
                    // An empty answer tells the model nothing; a person who
                    // means "no answer" rejects the question instead.
                    Some(text) if !text.trim().is_empty() => text,
                    Some(_) => {
                        return Err("text must not be empty (reject the question to leave \
                                    it unanswered)"
                            .to_owned());
                    }
                    None => return Err("text must be a string".to_owned()),
                },
            },
        };
        Ok((self.call_id, decision))
    }
}

impl Decisions {
    /// The decisions, checked: at least one, each call once.
    pub fn parse(self) -> Result<Vec<(String, agentloop_types::Decision)>, ApiError> {
        let items = match self.decisions {
            Some(items) if !items.is_empty() => items,
            Some(_) => return Err(ApiError::bad_request("decisions must not be empty")),
            None => return Err(ApiError::bad_request("decisions must be an array")),
        };
        let mut parsed: Vec<(String, agentloop_types::Decision)> = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let (call_id, decision) = item
                .decision()
                .map_err(|m| ApiError::bad_request(format!("decisions[{i}]: {m}")))?;
            if parsed.iter().any(|(id, _)| *id == call_id) {
                return Err(ApiError::bad_request(format!(
                    "decisions[{i}]: call {call_id} is decided twice"
                )));
            }
            parsed.push((call_id, decision));
        }
        Ok(parsed)
    }
}
