//! How runs read as A2A tasks: the status and artifacts each kind of
//! result gives (snapshots of the JSON a client receives), and how a
//! client's reply becomes decisions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_a2a::mapping::{self, Reply, TaskIds};
use agentloop_a2a::rpc::{ErrorCode, Request};
use agentloop_a2a::wire::{Message, Part, Role, Task};
use agentloop_types::{
    Decision, History, LimitKind, LoopResult, LoopStatus, Message as RunMessage, PendingCall,
    ProviderError, ProviderErrorKind, RunPath, TokenTotals, ToolUseBlock, Wait,
};
use serde_json::{Value, json};

fn ids() -> TaskIds {
    TaskIds {
        task_id: "run-1".to_owned(),
        context_id: "task-1".to_owned(),
    }
}

fn result(status: LoopStatus) -> LoopResult {
    LoopResult {
        status,
        messages: History::from(vec![
            RunMessage::user_text("u1", "Add a flag"),
            RunMessage::assistant_text("a1", "Added --verbose."),
        ]),
        tokens: TokenTotals::default(),
        stop: None,
    }
}

fn task_json(result: &LoopResult) -> Value {
    let ids = ids();
    serde_json::to_value(Task {
        id: ids.task_id.clone(),
        context_id: ids.context_id.clone(),
        status: mapping::status_of(&ids, result),
        artifacts: mapping::artifacts(result),
        history: Vec::new(),
        metadata: None,
    })
    .unwrap()
}

fn approval(id: &str) -> PendingCall {
    PendingCall {
        call: ToolUseBlock {
            id: id.to_owned(),
            name: "fs".to_owned(),
            input: json!({ "command": "create", "path": "a.md" }).into(),
        },
        path: RunPath::default(),
        wait: Wait::Approval {
            reason: "fs writes need approval".to_owned(),
        },
    }
}

#[test]
fn a_completed_run_has_its_answer_and_output_as_artifacts() {
    let done = result(LoopStatus::Complete {
        return_value: None,
        output: Some(json!({ "flag": "--verbose" })),
    });
    insta::assert_json_snapshot!(task_json(&done));
}

#[test]
fn a_waiting_run_requires_input_and_lists_its_calls() {
    let waiting = result(LoopStatus::Suspended {
        pending: vec![approval("call-1")],
        state: None,
    });
    insta::assert_json_snapshot!(task_json(&waiting));
}

#[test]
fn failed_cancelled_and_limited_runs_say_why() {
    let failed = result(LoopStatus::Error {
        error: agentloop_types::LoopError::Provider {
            error: ProviderError::new(ProviderErrorKind::InvalidRequest, "no such model"),
        },
    });
    let cancelled = result(LoopStatus::Cancelled);
    let limited = result(LoopStatus::LimitExceeded {
        limit: LimitKind::Requests,
        budget: None,
    });
    insta::assert_json_snapshot!(json!([
        task_json(&failed),
        task_json(&cancelled),
        task_json(&limited)
    ]));
}

fn reply(parts: Vec<Part>) -> Message {
    Message {
        message_id: "m".to_owned(),
        context_id: String::new(),
        task_id: "run-1".to_owned(),
        role: Role::User,
        parts,
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    }
}

#[test]
fn replies_become_decisions() {
    let wait = approval("c").wait;
    let text = |t: &str| mapping::decision_from_text(&wait, t);
    assert_eq!(text("approve"), Ok(Decision::Approve { arguments: None }));
    assert_eq!(text(" Yes."), Ok(Decision::Approve { arguments: None }));
    assert_eq!(
        text("reject: not in this folder"),
        Ok(Decision::Reject {
            reason: "not in this folder".to_owned()
        })
    );
    assert!(text("maybe later").unwrap_err().contains("approve"));
    let question = Wait::Question {
        question: "Which colour?".to_owned(),
    };
    assert_eq!(
        mapping::decision_from_text(&question, "blue"),
        Ok(Decision::Answer {
            text: "blue".to_owned()
        })
    );

    // A data part with decisions wins over text.
    let decisions = json!({ "decisions": [{ "call_id": "c", "decision": "approve" }] });
    let both = reply(vec![Part::text("reject"), Part::data(decisions.clone())]);
    assert_eq!(
        mapping::reply(&both),
        Some(Reply::Decisions(decisions.as_object().unwrap().clone()))
    );
    assert_eq!(
        mapping::reply(&reply(vec![Part::text("approve")])),
        Some(Reply::Text("approve".to_owned()))
    );
    assert_eq!(mapping::reply(&reply(Vec::new())), None);
}

#[test]
fn requests_are_checked_before_any_method_runs() {
    let code = |body: &str| Request::parse(body.as_bytes()).unwrap_err().1.code;
    assert_eq!(code("{"), ErrorCode::ParseError.code());
    assert_eq!(code("[]"), ErrorCode::InvalidRequest.code());
    assert_eq!(
        code(r#"{"id":1,"method":"GetTask"}"#),
        ErrorCode::InvalidRequest.code()
    );
    assert_eq!(
        code(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#),
        ErrorCode::InvalidParams.code()
    );
    let (id, _) = Request::parse(br#"{"jsonrpc":"1.0","id":"x","method":"GetTask"}"#).unwrap_err();
    assert_eq!(id, json!("x"));
    let request = Request::parse(br#"{"jsonrpc":"2.0","id":7,"method":"GetTask"}"#).unwrap();
    assert_eq!(request.params, json!({}));
}
