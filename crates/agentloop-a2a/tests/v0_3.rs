//! A2A 0.3 at the edge: its requests read as 1.0's, and 1.0's answers
//! written in 0.3's shapes (snapshots of what a 0.3 client receives).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_a2a::mapping::{self, TaskIds};
use agentloop_a2a::rpc::{ErrorCode, RpcError, method};
use agentloop_a2a::v0_3;
use agentloop_a2a::wire::{
    Message, Part, Role, StreamResponse, TaskArtifactUpdateEvent, TaskState,
};
use serde_json::json;

fn ids() -> TaskIds {
    TaskIds {
        task_id: "run-1".to_owned(),
        context_id: "task-1".to_owned(),
    }
}

#[test]
fn methods_map_to_their_1_0_counterparts() {
    assert_eq!(
        v0_3::to_v1_method("message/send"),
        Some(method::SEND_MESSAGE)
    );
    assert_eq!(
        v0_3::to_v1_method("message/stream"),
        Some(method::SEND_STREAMING_MESSAGE)
    );
    assert_eq!(v0_3::to_v1_method("tasks/get"), Some(method::GET_TASK));
    assert_eq!(
        v0_3::to_v1_method("tasks/cancel"),
        Some(method::CANCEL_TASK)
    );
    assert_eq!(
        v0_3::to_v1_method("tasks/resubscribe"),
        Some(method::SUBSCRIBE_TO_TASK)
    );
    assert_eq!(v0_3::to_v1_method("SendMessage"), None);
    assert_eq!(v0_3::to_v1_method("tasks/list"), None);
}

#[test]
fn a_send_reads_as_the_1_0_request() {
    let request = v0_3::send_params(
        "message/send",
        json!({
            "message": {
                "kind": "message", "messageId": "m1", "role": "user", "taskId": "run-1",
                "parts": [
                    { "kind": "text", "text": "approve" },
                    { "kind": "data", "data": { "decisions": [] } },
                    { "kind": "data", "data": { "value": [1, 2] }, "metadata": { "data_part_compat": true } }
                ],
                "metadata": { "tenant": "p1", "agentType": "review" }
            },
            "configuration": { "blocking": false, "historyLength": 0 }
        }),
    )
    .unwrap();
    assert_eq!(request.tenant, "p1");
    assert_eq!(request.message.role, Role::User);
    assert_eq!(request.message.task_id, "run-1");
    assert_eq!(request.message.parts[0], Part::text("approve"));
    assert_eq!(
        request.message.parts[1],
        Part::data(json!({ "decisions": [] }))
    );
    assert_eq!(request.message.parts[2], Part::data(json!([1, 2])));
    let configuration = request.configuration.unwrap();
    assert!(configuration.return_immediately);
    assert_eq!(configuration.history_length, None);

    let refused =
        v0_3::send_params("message/send", json!({ "message": { "parts": [] } })).unwrap_err();
    assert_eq!(refused.code, ErrorCode::InvalidParams.code());
    assert!(
        refused.message.starts_with("message/send params"),
        "{}",
        refused.message
    );
    let refused = v0_3::task_id_params("tasks/get", json!({ "id": 5 })).unwrap_err();
    assert_eq!(refused.code, ErrorCode::InvalidParams.code());
}

#[test]
fn answers_take_0_3_shapes() {
    let ids = ids();
    let waiting = mapping::input_required(&ids, &[]);
    let update = ids.update(ids.status(TaskState::InputRequired, Some(waiting)));
    insta::assert_json_snapshot!("input_required_update", v0_3::stream_item(&update));
    let working = ids.update(ids.status(TaskState::Working, None));
    assert_eq!(v0_3::stream_item(&working)["final"], false);
    let artifact = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
        task_id: ids.task_id.clone(),
        context_id: ids.context_id.clone(),
        artifact: agentloop_a2a::wire::Artifact {
            artifact_id: "output".to_owned(),
            name: "output".to_owned(),
            description: String::new(),
            parts: vec![Part::data(json!("just a string"))],
            metadata: None,
        },
        append: false,
        last_chunk: true,
        metadata: None,
    });
    insta::assert_json_snapshot!("wrapped_data_artifact", v0_3::stream_item(&artifact));
    let message = StreamResponse::Message(Message::agent(
        "m".to_owned(),
        "run-1",
        "task-1",
        vec![Part::text("hi")],
    ));
    insta::assert_json_snapshot!("agent_message", v0_3::stream_item(&message));
}

#[test]
fn errors_new_in_1_0_read_as_invalid_requests() {
    let version = RpcError::new(ErrorCode::VersionNotSupported, "no");
    assert_eq!(v0_3::error(&version).code, -32600);
    assert_eq!(v0_3::error(&RpcError::task_not_found()).code, -32001);
}
