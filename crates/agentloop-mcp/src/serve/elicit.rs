//! Pending calls as MCP elicitation forms, and the client's replies as
//! decisions. An approval asks for `approve` (and an optional `reason`
//! for the model); a question asks for `answer`.

use agentloop_types::{Decision, PendingCall, Wait};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::Value;

/// At most this many characters of a call's arguments go into a form's
/// message; the rest is cut with an ellipsis.
const ARGUMENTS_SHOWN: usize = 2_000;

/// The form that asks the client's person about `pending`.
pub fn elicitation_for(pending: &PendingCall) -> ElicitRequestParams {
    let (message, schema) = match &pending.wait {
        Wait::Approval { reason } => {
            let message = format!(
                "The agent wants to run the tool `{}` with {}. It needs approval: {reason}",
                pending.call.name,
                shown_arguments(&pending.call.input.value())
            );
            let schema = ElicitationSchema::builder()
                .required_bool_with("approve", |b| b.description("Run the call"))
                .optional_string_with("reason", |s| {
                    s.description("Why not, for the agent (when not approved)")
                })
                .build();
            (message, schema)
        }
        Wait::Question { question } => {
            let schema = ElicitationSchema::builder()
                .required_string_with("answer", |s| s.description("Your answer"))
                .build();
            (format!("The agent asks: {question}"), schema)
        }
    };
    // The builder only fails on an empty schema; ours always has a field.
    let schema = schema.unwrap_or_else(|_| ElicitationSchema::new(Default::default()));
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    }
}

/// The decision a client's reply to [`elicitation_for`] makes.
pub fn decision_from_reply(pending: &PendingCall, reply: &ElicitResult) -> Decision {
    let content = match reply.action {
        ElicitationAction::Accept => reply.content.as_ref(),
        // Decline, cancel, and any action a later protocol adds.
        _ => None,
    };
    match &pending.wait {
        Wait::Approval { .. } => match content {
            Some(content) if content.get("approve").and_then(Value::as_bool) == Some(true) => {
                Decision::Approve { arguments: None }
            }
            Some(content) => Decision::Reject {
                reason: content
                    .get("reason")
                    .and_then(Value::as_str)
                    .filter(|r| !r.trim().is_empty())
                    .map_or_else(|| "the person did not approve it".to_owned(), str::to_owned),
            },
            None => Decision::Reject {
                reason: "the person declined to approve it".to_owned(),
            },
        },
        Wait::Question { .. } => match content
            .and_then(|c| c.get("answer"))
            .and_then(Value::as_str)
        {
            Some(answer) => Decision::Answer {
                text: answer.to_owned(),
            },
            None => Decision::Reject {
                reason: "the person declined to answer".to_owned(),
            },
        },
    }
}

/// The decision for `pending` when the client cannot ask a person.
pub(crate) fn refusal(pending: &PendingCall) -> Decision {
    let reason = match &pending.wait {
        Wait::Approval { .. } => format!(
            "no person could approve it: the MCP client does not support elicitation; \
             the server's operator can allow {} calls with --approve {}",
            pending.call.name, pending.call.name
        ),
        Wait::Question { .. } => {
            "no person could answer: the MCP client does not support elicitation".to_owned()
        }
    };
    Decision::Reject { reason }
}

fn shown_arguments(input: &Value) -> String {
    let text = input.to_string();
    match text.char_indices().nth(ARGUMENTS_SHOWN) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_types::ToolUseBlock;
    use serde_json::json;

    fn approval() -> PendingCall {
        PendingCall {
            call: ToolUseBlock {
                id: "t1".into(),
                name: "fs_write".into(),
                input: json!({"path": "a.txt"}).into(),
            },
            path: Default::default(),
            wait: Wait::Approval {
                reason: "it writes files".into(),
            },
        }
    }

    fn reply(action: ElicitationAction, content: Option<Value>) -> ElicitResult {
        let mut result = ElicitResult::new(action);
        result.content = content;
        result
    }

    #[test]
    fn an_accepted_yes_approves() {
        let decision = decision_from_reply(
            &approval(),
            &reply(ElicitationAction::Accept, Some(json!({"approve": true}))),
        );
        assert_eq!(decision, Decision::Approve { arguments: None });
    }

    #[test]
    fn a_no_carries_the_reason() {
        let decision = decision_from_reply(
            &approval(),
            &reply(
                ElicitationAction::Accept,
                Some(json!({"approve": false, "reason": "not that file"})),
            ),
        );
        assert_eq!(
            decision,
            Decision::Reject {
                reason: "not that file".into()
            }
        );
    }

    #[test]
    fn a_declined_form_rejects() {
        let decision = decision_from_reply(&approval(), &reply(ElicitationAction::Decline, None));
        assert!(matches!(decision, Decision::Reject { .. }));
    }

    #[test]
    fn the_form_names_the_tool() {
        let ElicitRequestParams::FormElicitationParams { message, .. } =
            elicitation_for(&approval())
        else {
            panic!("a form is expected");
        };
        assert!(message.contains("fs_write"), "{message}");
    }
}
