//! Why a model turn ended, with what the provider said about it.
//!
//! The details (which stop sequence matched, why the model refused) are
//! optional: on the wire a reason without details keeps its plain form
//! (`"stop_sequence"`), so records written before details existed still
//! read, and a reason with details is an object
//! (`{"stop_sequence":{"sequence":"END"}}`).

use serde::{Deserialize, Serialize};

use crate::tokens::TokenTotals;

/// Why a model turn ended, normalised across providers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model wants tools run.
    ToolUse,
    /// The output token cap was hit.
    MaxTokens,
    /// A stop sequence was produced.
    StopSequence {
        /// The sequence that matched, when the provider says which.
        sequence: Option<String>,
    },
    /// The model refused.
    Refusal {
        /// The provider's explanation, when it gives one.
        details: Option<RefusalDetails>,
    },
    /// A long server-side turn paused; send the messages back to continue.
    PauseTurn,
    /// The provider's content filter stopped the output.
    ContentFilter,
    /// A reason this version does not know, verbatim.
    Other(String),
}

impl StopReason {
    /// A stop sequence ended the turn, which one unknown.
    pub const STOP_SEQUENCE: Self = Self::StopSequence { sequence: None };
    /// A refusal without details.
    pub const REFUSAL: Self = Self::Refusal { details: None };
}

/// What a provider said about a refusal (Anthropic's `stop_details`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RefusalDetails {
    /// Policy category, e.g. `cyber`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Human-readable explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

/// What a failed turn had reported before it failed: a stream cut after
/// its usage arrived still says what was billed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct PartialTurn {
    /// The stop reason, when it arrived before the cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Tokens and cost reported before the cut (`cost_unreliable` is set:
    /// the final count may have been higher).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenTotals>,
}

// Token counts never hold NaN (costs are sums of finite products), so the
// equality is an equivalence, and `ProviderError` can keep deriving `Eq`.
impl Eq for PartialTurn {}

/// The plain wire form: one name, or `{"other": "..."}`.
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
enum Plain {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    Refusal,
    PauseTurn,
    ContentFilter,
    Other(String),
}

/// The detailed wire form, used only when details are present.
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
enum Detailed {
    StopSequence { sequence: String },
    Refusal(RefusalDetails),
}

#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
enum Wire {
    Plain(Plain),
    Detailed(Detailed),
}

// The schema of the wire form, which is what the serde impls below write.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for StopReason {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StopReason".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Wire::json_schema(generator)
    }
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let wire = match self.clone() {
            Self::EndTurn => Wire::Plain(Plain::EndTurn),
            Self::ToolUse => Wire::Plain(Plain::ToolUse),
            Self::MaxTokens => Wire::Plain(Plain::MaxTokens),
            Self::StopSequence { sequence: None } => Wire::Plain(Plain::StopSequence),
            Self::StopSequence {
                sequence: Some(sequence),
            } => Wire::Detailed(Detailed::StopSequence { sequence }),
            Self::Refusal { details: None } => Wire::Plain(Plain::Refusal),
            Self::Refusal {
                details: Some(details),
            } => Wire::Detailed(Detailed::Refusal(details)),
            Self::PauseTurn => Wire::Plain(Plain::PauseTurn),
            Self::ContentFilter => Wire::Plain(Plain::ContentFilter),
            Self::Other(other) => Wire::Plain(Plain::Other(other)),
        };
        wire.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Wire::deserialize(deserializer)? {
            Wire::Plain(Plain::EndTurn) => Self::EndTurn,
            Wire::Plain(Plain::ToolUse) => Self::ToolUse,
            Wire::Plain(Plain::MaxTokens) => Self::MaxTokens,
            Wire::Plain(Plain::StopSequence) => Self::STOP_SEQUENCE,
            Wire::Plain(Plain::Refusal) => Self::REFUSAL,
            Wire::Plain(Plain::PauseTurn) => Self::PauseTurn,
            Wire::Plain(Plain::ContentFilter) => Self::ContentFilter,
            Wire::Plain(Plain::Other(other)) => Self::Other(other),
            Wire::Detailed(Detailed::StopSequence { sequence }) => Self::StopSequence {
                sequence: Some(sequence),
            },
            Wire::Detailed(Detailed::Refusal(details)) => Self::Refusal {
                details: Some(details),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_reasons_keep_their_old_form_and_details_round_trip() {
        let cases = [
            (StopReason::EndTurn, json!("end_turn")),
            (StopReason::STOP_SEQUENCE, json!("stop_sequence")),
            (StopReason::REFUSAL, json!("refusal")),
            (StopReason::Other("x".into()), json!({"other": "x"})),
            (
                StopReason::StopSequence {
                    sequence: Some("END".into()),
                },
                json!({"stop_sequence": {"sequence": "END"}}),
            ),
            (
                StopReason::Refusal {
                    details: Some(RefusalDetails {
                        category: Some("cyber".into()),
                        explanation: Some("no".into()),
                    }),
                },
                json!({"refusal": {"category": "cyber", "explanation": "no"}}),
            ),
        ];
        for (reason, wire) in cases {
            assert_eq!(serde_json::to_value(&reason).unwrap(), wire);
            assert_eq!(serde_json::from_value::<StopReason>(wire).unwrap(), reason);
        }
    }
}
