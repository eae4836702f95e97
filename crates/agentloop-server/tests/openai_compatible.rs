//! An agent run against an OpenAI-compatible endpoint (wiremock on
//! 127.0.0.1) through the real HTTP provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_providers::{HttpProvider, ProviderConfig};
use agentloop_storage::MemoryStore;
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "local",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }]
    });
    format!("data: {body}\n\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_streams_from_an_openai_compatible_server() {
    agentloop_providers::ensure_crypto_provider();
    let mock = MockServer::start().await;
    let sse = [
        chunk(json!({ "role": "assistant", "content": "" }), None),
        chunk(json!({ "content": "Plan " }), None),
        chunk(json!({ "content": "written." }), None),
        chunk(json!({}), Some("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(sse),
        )
        .expect(1)
        .mount(&mock)
        .await;
    let config = ProviderConfig::openai_compatible(format!("{}/v1", mock.uri()), None);
    let provider = Arc::new(HttpProvider::new(config).unwrap());
    let mut server_config = common::config(provider);
    server_config.model = "local".to_owned();
    let store = Arc::new(MemoryStore::new());
    let server = common::start_with(store.clone(), server_config).await;
    let (_, task_id) = server.project_and_task().await;
    let (status, run) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": "planification" }),
        )
        .await;
    assert_eq!(status, 201);
    let runs = server.settle(&task_id, 1).await;
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");
    let (_, messages) = server
        .get(&format!(
            "/api/agent-runs/{}/messages",
            run["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        messages[1]["message"]["content"][0]["text"],
        "Plan written."
    );
    let requests = mock.received_requests().await.unwrap();
    let request: serde_json::Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(request["model"], "local");
    server.stop().await;
}
