//! Starting an agent run and the inputs a run takes: the seed's start,
//! a typed [`RunInput`](agentloop_types::RunInput), AG-UI's run input.

use agentloop_storage::model::AgentType;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::body::RequestBody;
use crate::http::error::ApiError;

/// One of the server's agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentName {
    /// Plans with a person: no chaining.
    Planification,
    /// Implements; chains to `review`.
    Implementation,
    /// Reviews; chains to `implementation`.
    Review,
}

impl From<AgentName> for AgentType {
    fn from(name: AgentName) -> Self {
        match name {
            AgentName::Planification => Self::Planification,
            AgentName::Implementation => Self::Implementation,
            AgentName::Review => Self::Review,
        }
    }
}

/// The message of a start without a valid agent type (seed 004's).
pub const INVALID_AGENT_TYPE: &str =
    "Invalid agent type. Must be one of: planification, implementation, review";

/// `POST /api/tasks/{taskId}/agent-runs`: which agent to start.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct NewAgentRun {
    /// The agent to start.
    #[serde(rename = "agentType")]
    pub agent_type: AgentName,
}

impl RequestBody for NewAgentRun {
    fn refused(_: String) -> ApiError {
        ApiError::bad_request(INVALID_AGENT_TYPE)
    }
}

/// `POST /api/tasks/{taskId}/inputs` and `POST /api/agent-runs/{runId}/inputs`:
/// a [`RunInput`](agentloop_types::RunInput), the same typed input every
/// host submits (its schema is `docs/inputs.schema.json`'s).
impl RequestBody for agentloop_types::RunInput {
    /// The body is checked against `RunInput`'s own JSON Schema (the one
    /// the OpenAPI document and `docs/inputs.schema.json` give): serde takes
    /// a variant's index for a tag (`"kind": 0`), which the schema refuses.
    /// The variant its `type` names is checked alone, so the refusal names
    /// the field at fault; an unknown `type` is left to serde's refusal.
    fn check(body: &serde_json::Value) -> Result<(), String> {
        static VARIANTS: std::sync::LazyLock<Result<Vec<(String, jsonschema::Validator)>, String>> =
            std::sync::LazyLock::new(input_variants);
        let variants = VARIANTS
            .as_ref()
            .map_err(|e| format!("the input schema cannot be read: {e}"))?;
        let tag = InputTag::deserialize(body).ok().and_then(|tag| tag.kind);
        let Some((_, validator)) = variants
            .iter()
            .find(|(name, _)| Some(name.as_str()) == tag.as_deref())
        else {
            return Ok(());
        };
        match validator.iter_errors(body).next() {
            None => Ok(()),
            Some(error) => Err(format!("{}: {error}", error.instance_path())),
        }
    }
}

/// The tag of an input body, read alone to pick its variant's schema
/// (absent or not a string: no variant is picked).
#[derive(Deserialize)]
struct InputTag {
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// A validator of each `RunInput` variant, by its `type`, from the
/// schema's `oneOf` (each with the schema's shared definitions).
fn input_variants() -> Result<Vec<(String, jsonschema::Validator)>, String> {
    let schema = serde_json::to_value(schemars::schema_for!(agentloop_types::RunInput))
        .map_err(|e| e.to_string())?;
    let defs = schema.get("$defs").cloned().unwrap_or_default();
    let variants = schema
        .get("oneOf")
        .and_then(serde_json::Value::as_array)
        .ok_or("it has no variants")?;
    variants
        .iter()
        .map(|variant| {
            let name = variant
                .pointer("/properties/type/const")
                .and_then(serde_json::Value::as_str)
                .ok_or("a variant has no `type`")?
                .to_owned();
            let mut alone = variant.clone();
            if let Some(object) = alone.as_object_mut() {
                object.insert("$defs".to_owned(), defs.clone());
            }
            let validator = jsonschema::validator_for(&alone).map_err(|e| e.to_string())?;
            Ok((name, validator))
        })
        .collect()
}

/// `POST /api/tasks/{taskId}/ag-ui`: AG-UI's `RunAgentInput` (other
/// fields are ignored).
#[derive(Debug, Clone)]
pub struct AgUiInput(pub agentloop_agui::RunAgentInput);

impl<'de> Deserialize<'de> for AgUiInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        agentloop_agui::RunAgentInput::deserialize(deserializer).map(Self)
    }
}

impl RequestBody for AgUiInput {
    fn refused(problem: String) -> ApiError {
        ApiError::bad_request(format!("not an AG-UI RunAgentInput: {problem}"))
    }
}

impl JsonSchema for AgUiInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RunAgentInput".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let decided = |status: &str, payload: Value| {
            serde_json::json!({
                "type": "object",
                "properties": {
                    "interruptId": {"type": "string"},
                    "status": {"enum": [status]},
                    "payload": payload
                },
                "required": if status == "cancelled" {
                    serde_json::json!(["interruptId", "status"])
                } else {
                    serde_json::json!(["interruptId", "status", "payload"])
                }
            })
        };
        let approval = serde_json::json!({
            "type": "object",
            "properties": {
                "approved": {"type": "boolean"},
                "arguments": {"type": "object"},
                "reason": {"type": "string"}
            },
            "required": ["approved"],
            "not": {"required": ["answer"]}
        });
        let answer = serde_json::json!({
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"]
        });
        schemars::json_schema!({
            "type": "object",
            "properties": {
                "threadId": {"type": "string", "minLength": 1},
                "runId": {"type": "string", "minLength": 1},
                "messages": {"type": "array", "items": {"type": "object"}},
                "forwardedProps": {
                    "type": "object",
                    "properties": {"agentType": {"enum": ["planification", "implementation", "review"]}}
                },
                "resume": {"type": "array", "items": {"anyOf": [
                    decided("cancelled", serde_json::json!({"type": "object"})),
                    decided("resolved", serde_json::json!({"anyOf": [approval, answer]}))
                ]}}
            },
            "required": ["threadId", "runId"]
        })
    }
}
